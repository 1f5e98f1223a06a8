"""Plant one-line autograd hazards in real multi-file projects; count what tapelint finds.

    python benchmarks/plant.py [--dest DIR] [--only N ...] [--semantics torch|strict]

Each plant changes one line of a corpus project (see `corpus.py`) into the
hazard people really write: a removed `repackage_hidden`/`.detach()`,
`+= loss` for `+= loss.item()`, rollouts collected with grad and reused
across PPO epochs, a tracked metric kept on a trainer. The script copies the
whole project to a temporary folder, applies the plant, runs `tapelint check
--format json` on the whole copy, and calls the plant **found** when a
finding of the expected rule lies in the planted file within `NEAR` lines of
the expected line and was not already there before the plant. A plant whose
original line does not occur exactly once in its file is refused (reported,
counted as refused, not run), so a drifted corpus cannot pass silently.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from corpus import corpus_dest
from corpus_run import tapelint_command

NEAR = 3
AFTER_WINDOW = 5  # lines after an anchor in which the original must occur


@dataclass(frozen=True)
class Plant:
    """One line of `file` (exact, indentation included) and what replaces it.
    `line` is where the expected finding's primary range starts."""

    project: str
    file: str
    original: str
    replacement: str
    rule: str
    line: int
    hazard: str
    llm: bool = False
    # When the original line recurs in the file: a line that occurs exactly
    # once, right before the block the original must occur exactly once in.
    after: str = ""
    # Other lines of the same file where the expected finding may start: the
    # later definitions of a value that flows on (`value` -> `b_values`).
    also: tuple[int, ...] = ()
    # The file the finding is reported in, when not the planted one: a hazard
    # inside a function that only a caller's model makes tracked is reported
    # at that caller's call (`line` is then in this file).
    reported_in: str = ""


# The metric line trl's DPO and GRPO trainers share; the plants drop its `.item()`.
TRL_AUX_METRIC = (
    '            self._metrics[mode]["aux_loss"]'
    '.append(self.accelerator.gather_for_metrics(aux_loss).mean().item())'
)

PLANTS: tuple[Plant, ...] = (
    Plant(
        "examples", "word_language_model/main.py",
        "            hidden = repackage_hidden(hidden)",
        "            pass",
        "TL005", 184, "RNN hidden state carried without repackage_hidden (model in model.py)",
    ),
    Plant(
        "examples", "word_language_model/main.py",
        "        total_loss += loss.item()",
        "        total_loss += loss",
        "TL003", 196, "`total_loss += loss` instead of `.item()`",
    ),
    Plant(
        "examples", "dcgan/main.py",
        "        output = netD(fake.detach())",
        "        output = netD(fake)",
        "TL002", 257, "GAN discriminator step without `fake.detach()`; errG.backward walks freed G graph",
    ),
    Plant(
        "examples", "vae/main.py",
        "        train_loss += loss.item()",
        "        train_loss += loss",
        "TL003", 101, "`train_loss += loss` instead of `.item()`",
    ),
    Plant(
        "PyTorch-GAN", "implementations/dcgan/dcgan.py",
        "        fake_loss = adversarial_loss(discriminator(gen_imgs.detach()), fake)",
        "        fake_loss = adversarial_loss(discriminator(gen_imgs), fake)",
        "TL002", 182, "D step without `gen_imgs.detach()` after g_loss.backward freed G's graph",
    ),
    Plant(
        "PyTorch-GAN", "implementations/pix2pix/pix2pix.py",
        "        pred_fake = discriminator(fake_B.detach(), real_A)",
        "        pred_fake = discriminator(fake_B, real_A)",
        "TL002", 171, "pix2pix D step without `fake_B.detach()` after loss_G.backward (models in models.py)",
    ),
    Plant(
        "pytorch-tutorial", "tutorials/02-intermediate/language_model/main.py",
        "        states = detach(states)",
        "        pass",
        "TL005", 75, "module-level LSTM loop carrying `states` without detach",
    ),
    Plant(
        "pytorch-a2c-ppo-acktr-gail", "main.py",
        "            with torch.no_grad():",
        "            with torch.enable_grad():",
        "TL001", 116, "rollouts collected with grad, reused across PPO epochs (agent in algo/ppo.py, storage.py)",
    ),
    Plant(
        "pytorch-a2c-ppo-acktr-gail", "a2c_ppo_acktr/algo/ppo.py",
        "                value_loss_epoch += value_loss.item()",
        "                value_loss_epoch += value_loss",
        "TL003", 86, "`value_loss_epoch += value_loss` in PPO.update",
    ),
    Plant(
        "cleanrl", "cleanrl/ppo.py",
        "            with torch.no_grad():",
        "            with torch.enable_grad():",
        "TL001", 199, "module-level PPO: rollout values/logprobs with grad reused across minibatches and epochs",
        also=(235, 239),
    ),
    Plant(
        "OpenRLHF", "openrlhf/trainer/sft_trainer.py",
        "                loss_sum += gpt_loss.item()",
        "                loss_sum += gpt_loss",
        "TL003", 184, "SFT trainer `loss_sum += gpt_loss` (model via strategy, loss_fn on self)", llm=True,
    ),
    Plant(
        "OpenRLHF", "openrlhf/trainer/dpo_trainer.py",
        "                loss_sum += preference_loss.item()",
        "                loss_sum += preference_loss",
        "TL003", 186, "DPO trainer `loss_sum += preference_loss`", llm=True,
    ),
    Plant(
        "trl", "trl/trainer/dpo_trainer.py",
        TRL_AUX_METRIC,
        TRL_AUX_METRIC.replace(".mean().item())", ".mean())"),
        "TL003", 1583, "DPO compute_loss keeps the tracked aux loss in self._metrics every step", llm=True,
    ),
    Plant(
        # Not the policy-loss metric at line 3183: every branch binds `policy_loss = loss.detach()`
        # before it, so dropping that `.item()` there is no hazard (tapelint rightly stays silent).
        "trl", "trl/trainer/grpo_trainer.py",
        TRL_AUX_METRIC,
        TRL_AUX_METRIC.replace(".mean().item())", ".mean())"),
        "TL003", 3221,
        "GRPO compute_loss keeps the tracked router aux loss (a term of the backwarded loss) in self._metrics",
        llm=True,
    ),
    Plant(
        "trlx", "trlx/trainer/accelerate_ppo_trainer.py",
        "                with torch.no_grad():",
        "                with torch.enable_grad():",
        "TL001", 420, "RLHF rollouts: logprobs/values computed with grad, stored, reused across PPO epochs", llm=True,
        after="                position_ids.masked_fill_(attention_mask == 0, 1)",
        also=(472, 473),  # the per-sample slices of those values that the store keeps
    ),
    # Held out (sixth session): planted into projects first linted after the
    # rules were tuned, so these measure recall on code they were not tuned on.
    Plant(
        "pytorch-soft-actor-critic", "sac.py",
        "            alpha_loss = -(self.log_alpha * (log_pi + self.target_entropy).detach()).mean()",
        "            alpha_loss = -(self.log_alpha * (log_pi + self.target_entropy)).mean()",
        "TL002", 91, "SAC temperature loss without detach: walks the policy graph policy_loss.backward() freed",
    ),
    Plant(
        "LLaMA-Factory", "src/llamafactory/v1/core/base_trainer.py",
        "                    step_loss += loss.item()",
        "                    step_loss += loss",
        "TL003", 291, "LLM trainer: micro-batch loss summed as a tensor", llm=True,
    ),
    Plant(
        "llama-recipes", "src/llama_cookbook/utils/train_utils.py",
        "                    total_loss += loss.detach().float()",
        "                    total_loss += loss.float()",
        "TL003", 405, "Llama fine-tuning: epoch loss summed without detach (reported at finetuning.py's train() call,"
        " which passes the library model)", llm=True, reported_in="src/llama_cookbook/finetuning.py",
    ),
    Plant(
        "llm.c", "train_gpt2.py",
        "                lossf += loss.detach() # keep track of the mean loss",
        "                lossf += loss # keep track of the mean loss",
        "TL003", 816, "GPT-2 training: accumulation-steps loss summed without detach",
    ),
    Plant(
        "denoising-diffusion-pytorch", "denoising_diffusion_pytorch/denoising_diffusion_pytorch.py",
        "                        total_loss += loss.item()",
        "                        total_loss += loss",
        "TL003", 1068, "diffusion trainer: gradient-accumulation loss summed as a tensor",
    ),
    # Held out (seventh session): planted before this session's analysis
    # changes were merged, into projects no plant had touched.
    Plant(
        "pytorch-playground", "mnist/train.py",
        "                test_loss += F.cross_entropy(output, target).data",
        "                test_loss += F.cross_entropy(output, target)",
        "TL003", 108, "legacy MNIST evaluation (`volatile=True`, a no-op since 0.4): test loss summed with its graph,"
        " model from model.py",
    ),
    # (Eighteenth session: replaces a DeepRL plant, undetached PPO rollout
    # entries, in a program that cannot run: every DeepRL agent imports
    # `deep_rl/component/replay.py`, whose `async=True` parameter is a syntax
    # error on every Python since 3.7, so the planted file fails at its import
    # and the rollout storage it goes through is TL900. The shape it planted
    # is `fixtures/projects/tl001_rollout_storage_keys_by_name`.)
    Plant(
        "higher", "examples/maml-omniglot.py",
        "                qry_losses.append(qry_loss.detach())",
        "                qry_losses.append(qry_loss)",
        "TL003", 177, "MAML with `higher`: each task's query loss kept with its second-order graph, their mean"
        " appended to the run's log every meta-batch (the log outlives every epoch)",
        after="                qry_loss = F.cross_entropy(qry_logits, y_qry[i])", also=(157,),
    ),
    # (Ninth session: replaces a pytorch-maml plant that was no hazard: its
    # evaluation runs under `set_grad_enabled(self.model.training)` after
    # `model.eval()`, so the running mean it planted held no graph.)
    Plant(
        "learn2learn", "examples/vision/maml_omniglot.py",
        "            meta_valid_error += evaluation_error.item()",
        "            meta_valid_error += evaluation_error",
        "TL003", 115, "MAML meta-validation: each task's adapted error (never backwarded, computed with grad)"
        " summed, keeping every task's second-order graph until the next meta-batch",
    ),
)


@dataclass(frozen=True)
class Outcome:
    plant: Plant
    verdict: str  # found, missed, refused, error
    detail: str = ""


def apply(plant: Plant, root: str) -> str | None:
    """Replace the plant's line under `root`; a reason when it is not there exactly once."""
    path = os.path.join(root, plant.file)
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().split("\n")
    except OSError as error:
        return f"cannot read {plant.file}: {error.strerror}"
    start = 0
    if plant.after:
        anchors = [i for i, line in enumerate(lines) if line == plant.after]
        if len(anchors) != 1:
            return f"anchor line occurs {len(anchors)} times in {plant.file}, not once"
        start = anchors[0] + 1
    window = lines[start : start + AFTER_WINDOW] if plant.after else lines
    where = [start + i for i, line in enumerate(window) if line == plant.original]
    if len(where) != 1:
        anchor = " after its anchor" if plant.after else ""
        return f"original line occurs {len(where)} times in {plant.file}{anchor}, not once"
    lines[where[0]] = plant.replacement
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines))
    return None


def findings(root: str, semantics: str, jobs: int) -> set[tuple[str, str, int]] | str:
    """(path relative to root, code, line) of every finding; a message if tapelint failed."""
    done = subprocess.run(
        ["nice", "-n", "10", *tapelint_command(), "check", "--format", "json", "--semantics", semantics,
         "--jobs", str(jobs), "--exclude", "*.ipynb", root],
        capture_output=True,
        text=True,
        cwd=root,  # as a user runs it, from the project: its root (and `src/`) resolve imports
    )
    try:  # exit 2 with a report: some file hit an internal error, the others were checked
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        return f"tapelint exited {done.returncode} without a report: {done.stderr.strip()[-200:]}"
    found = {(os.path.relpath(d["path"], root), d["code"], d["range"]["start"]["line"]) for d in report["diagnostics"]}
    # A file that crashed the analysis reports nothing: keep it visible as a pseudo-finding.
    return found | {(os.path.relpath(e["path"], root), "error", 0) for e in report.get("errors", ())}


def judge(plant: Plant, before: set[tuple[str, str, int]], after: set[tuple[str, str, int]]) -> Outcome:
    new = sorted(after - before)
    expected = (plant.line, *plant.also)
    near = [
        f for f in new
        if f[0] == (plant.reported_in or plant.file) and f[1] == plant.rule
        and any(abs(f[2] - line) <= NEAR for line in expected)
    ]
    if near:
        return Outcome(plant, "found", f"line {near[0][2]}")
    if (plant.file, "error", 0) in after:
        return Outcome(plant, "missed", "the planted file hit an internal error")
    other = ", ".join(f"{code} {path}:{line}" for path, code, line in new[:3])
    return Outcome(plant, "missed", f"new findings elsewhere: {other}" if other else "no new finding")


def run_plants(chosen: Sequence[Plant], dest: str, semantics: str, jobs: int) -> list[Outcome]:
    outcomes: list[Outcome] = []
    baselines: dict[str, set[tuple[str, str, int]] | str] = {}
    for plant in chosen:
        source = os.path.join(dest, plant.project)
        if not os.path.isdir(source):
            outcomes.append(Outcome(plant, "refused", f"project {plant.project} is not in the corpus (run corpus.py)"))
            continue
        with tempfile.TemporaryDirectory(prefix="tapelint-plant-") as scratch:
            copy = os.path.join(scratch, plant.project)
            shutil.copytree(source, copy, symlinks=True)
            problem = apply(plant, copy)
            if problem:
                outcomes.append(Outcome(plant, "refused", problem))
                continue
            if plant.project not in baselines:
                baselines[plant.project] = findings(source, semantics, jobs)
            before, after = baselines[plant.project], findings(copy, semantics, jobs)
        if isinstance(before, str) or isinstance(after, str):
            outcomes.append(Outcome(plant, "error", before if isinstance(before, str) else str(after)))
            continue
        outcomes.append(judge(plant, before, after))
        print(f"  {len(outcomes):2}. {plant.project}: {outcomes[-1].verdict}", file=sys.stderr, flush=True)
    return outcomes


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dest", help="corpus folder (as for corpus.py)")
    parser.add_argument("--only", nargs="+", type=int, metavar="N", help="only these plants (1-based)")
    parser.add_argument("--semantics", choices=("torch", "strict"), default="torch")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", help="also write the outcomes as JSON to this file")
    args = parser.parse_args(argv)
    dest = os.path.abspath(corpus_dest(args.dest))
    numbered = list(enumerate(PLANTS, 1))
    chosen = [(n, p) for n, p in numbered if not args.only or n in args.only]
    outcomes = run_plants([p for _, p in chosen], dest, args.semantics, args.jobs)

    print(f"{'#':>2} {'project':27} {'file:line':58} {'rule':5} {'LLM':3}  result")
    for (n, plant), outcome in zip(chosen, outcomes):
        where = f"{plant.reported_in or plant.file}:{plant.line}"
        print(f"{n:2} {plant.project:27} {where:58} {plant.rule:5} {'yes' if plant.llm else '':3}  "
              f"{outcome.verdict}  ({outcome.detail})")
        print(f"{'':3}{plant.hazard}")
    ran = [o for o in outcomes if o.verdict in ("found", "missed")]
    found = sum(1 for o in ran if o.verdict == "found")
    llm = [o for o in ran if o.plant.llm]
    print(f"recall ({args.semantics}): {found}/{len(ran)} found"
          f"; LLM fine-tuning/RLHF: {sum(1 for o in llm if o.verdict == 'found')}/{len(llm)}"
          f"; refused {sum(1 for o in outcomes if o.verdict == 'refused')}"
          f"; errors {sum(1 for o in outcomes if o.verdict == 'error')}")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump([{"plant": n, **asdict(plant), "verdict": o.verdict, "detail": o.detail}
                       for (n, plant), o in zip(chosen, outcomes)], handle, indent=1)
    return 0 if all(o.verdict != "refused" and o.verdict != "error" for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())

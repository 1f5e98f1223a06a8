"""Rebuild the real-code corpus that tapelint is judged on, outside the repository.

    python benchmarks/corpus.py [--dest DIR] [--only NAME ...] [--list]

Code nobody wrote for tapelint: training loops, RL agents, GANs, language
models, LLM fine-tuning and RLHF trainers, meta-learning, tutorials. Each
source becomes one project folder `DEST/<name>` (default `/work/corpus`, or
`$TAPELINT_CORPUS`); nothing of it is ever committed.

- Package sdists, pinned, fetched with `pip download --no-deps --no-binary
  :all:` and unpacked.
- Public repositories at a pinned commit, taken from a local bare git mirror
  (its `.py` files and `pyproject.toml`/`setup.cfg`, read with git). The mirrors are not made by this
  script: bring each one onto the machine first (the workspace's `fetch` of
  `github:owner/name`, which lands in `$TAPELINT_MIRRORS`, default
  `/work/.mirror/owner+name/repo`). A missing mirror or commit is reported on
  one line and that project is skipped.
- The installed torch package, used in place (not copied).

Printed: a table of source, files and lines per project (Python files only:
the corpus runs leave notebooks out so the bare-parse baseline sees exactly
the same text). A rebuilt project replaces the previous copy whole.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bare_parse import count_lines

DEFAULT_DEST = "/work/corpus"
DEFAULT_MIRRORS = "/work/.mirror"
# What a repository contributes: its Python code and the files that configure it.
KEPT_SUFFIXES = (".py", "pyproject.toml", "setup.cfg")


@dataclass(frozen=True)
class Sdist:
    """A PyPI source distribution at a pinned version."""

    name: str
    version: str
    kind: str

    @property
    def project(self) -> str:
        return self.name

    @property
    def source(self) -> str:
        return f"sdist {self.name}=={self.version}"


@dataclass(frozen=True)
class Repository:
    """A public repository at a pinned commit; `paths` limits it to a subset."""

    slug: str
    commit: str
    kind: str
    paths: tuple[str, ...] = ()

    @property
    def project(self) -> str:
        return self.slug.split("/")[1]

    @property
    def source(self) -> str:
        subset = f" [{', '.join(self.paths)}]" if self.paths else ""
        return f"git {self.slug}@{self.commit[:10]}{subset}"


@dataclass(frozen=True)
class Project:
    """A corpus project as the runs see it: a name, its folder, where it came from."""

    name: str
    path: str
    source: str
    kind: str
    issue12: bool = False


SDISTS: tuple[Sdist, ...] = (
    Sdist("stable-baselines3", "2.9.2", "RL"),
    Sdist("pytorch-ignite", "0.5.5", "training framework"),
    Sdist("skorch", "1.4.0", "training framework"),
    Sdist("tianshou", "2.0.1", "RL"),
    Sdist("pyro-ppl", "1.9.2", "probabilistic programming"),
    Sdist("snntorch", "1.0.0", "spiking networks"),
    Sdist("d2l", "1.0.3", "tutorial"),
    Sdist("peft", "0.21.2", "LLM fine-tuning"),
    Sdist("accelerate", "1.15.0", "LLM fine-tuning"),
)

# The first eight are issue 12's speed corpus (~503k lines together).
ISSUE12 = frozenset(
    {"examples", "nanoGPT", "pytorch-lightning", "detectron2", "diffusers", "stylegan2-ada-pytorch", "learn2learn",
     "higher"}
)
REPOSITORIES: tuple[Repository, ...] = (
    Repository("pytorch/examples", "77f55b912142e11fcfdf5b530231fb9c52f181e8", "examples"),
    Repository("karpathy/nanoGPT", "3adf61e154c3fe3fca428ad6bc3818b27a3b8291", "language model"),
    Repository("Lightning-AI/pytorch-lightning", "7f0c3436cd3f6ad3753125672024fc415cbcb414", "training framework"),
    Repository("facebookresearch/detectron2", "02b5c4e295e990042a714712c21dc79b731e8833", "vision"),
    Repository(
        "huggingface/diffusers",
        "58eb52c0803ea9af3abec60841c2a093bdf1f951",
        "diffusion training",
        ("examples", "src/diffusers/training_utils.py", "src/diffusers/optimization.py"),
    ),
    Repository("NVlabs/stylegan2-ada-pytorch", "d72cc7d041b42ec8e806021a205ed9349f87c6a4", "GAN"),
    Repository("learnables/learn2learn", "db5cee3795490071282bbdfa81179ef732349196", "meta-learning"),
    Repository("facebookresearch/higher", "15a247ac06cac0d22601322677daff0dcfff062e", "meta-learning"),
    Repository("eriklindernoren/PyTorch-GAN", "36d3c77e5ff20ebe0aeefd322326a134a279b93e", "GAN"),
    Repository("ikostrikov/pytorch-a2c-ppo-acktr-gail", "41332b78dfb50321c29bade65f9d244387f68a60", "RL"),
    Repository("vwxyzjn/cleanrl", "fe8d8a03c41a7ef5b523e2e354bd01c363e786bb", "RL"),
    Repository("huggingface/trl", "f2cd57710ae345ea6428ae95363267fcf38a3dc8", "LLM fine-tuning/RLHF"),
    Repository("CarperAI/trlx", "3340c2f3a56d1d14fdd5f13ad575121fa26b6d92", "LLM fine-tuning/RLHF"),
    Repository("OpenRLHF/OpenRLHF", "3c3be6234e0cb353e76bb8019947db9dfe99fca7", "LLM fine-tuning/RLHF"),
    Repository("huggingface/alignment-handbook", "925acdfe4b2b4e38c3dabd1851bc418f0b656351", "LLM fine-tuning/RLHF"),
    Repository("tloen/alpaca-lora", "8bb8579e403dc78e37fe81ffbb253c413007323f", "LLM fine-tuning"),
    Repository("tatsu-lab/stanford_alpaca", "761dc5bfbdeeffa89b8bff5d038781a4055f796a", "LLM fine-tuning"),
    Repository("Lightning-AI/litgpt", "26857050fe3ff627cd714fe92f5838f51a3d5efa", "LLM fine-tuning"),
    Repository("karpathy/nanochat", "92d63d4e8bb4df75c3b71618f31ddde2378b2bcd", "language model"),
    Repository("karpathy/minGPT", "37baab71b9abea1b76ab957409a1cc2fbfba8a26", "language model"),
    Repository("dragen1860/MAML-Pytorch", "98a00d41724c133bd29619a2fb2cc46dd128a368", "meta-learning"),
    Repository("tristandeleu/pytorch-meta", "d55d89ebd47f340180267106bde3e4b723f23762", "meta-learning"),
    Repository("yunjey/pytorch-tutorial", "0500d3df5a2a8080ccfccbc00aca0eacc21818db", "tutorial"),
    # Held out: added in the sixth session and first linted with the analysis as it then
    # stood, so their findings measure code the rules were not tuned on.
    Repository("openai/spinningup", "038665d62d569055401d91856abb287263096178", "RL"),
    Repository("sfujim/TD3", "34770ccdcb51df6f6c7d85c1ba7e40d71b940d16", "RL"),
    Repository("pranz24/pytorch-soft-actor-critic", "c1805660b3961694be54079a355155a5cad492f5", "RL"),
    Repository("ShangtongZhang/DeepRL", "c0968b5c046314af09944843cdf06f4100c6bb95", "RL"),
    Repository("sthalles/SimCLR", "1848fc934ad844ae630e6c452300433fe99acfd9", "self-supervised"),
    Repository("lucidrains/denoising-diffusion-pytorch", "faed4db28e724735323fa91c70aa9b28a6e1cbac",
               "diffusion training"),
    Repository("tristandeleu/pytorch-maml", "44104272a0140b35e2223ba68750e7e715315653", "meta-learning"),
    Repository("aaron-xichen/pytorch-playground", "5d476295f1c1564c8074eb885bb6138d6bd09889", "tutorial"),
    Repository("karpathy/llm.c", "f1e2ace651495b74ae22d45d1723443fd00ecd3a", "language model"),
    Repository("jzhang38/TinyLlama", "bf122247c486b6b897050e98cbb7bedae8eeba73", "language model"),
    Repository("artidoro/qlora", "7f4e95a68dc076bea9b3a413d2b512eca6d004e5", "LLM fine-tuning"),
    Repository("eric-mitchell/direct-preference-optimization", "f8b8c0f49dc92a430bae41585f9d467d3618fe2f",
               "LLM fine-tuning/RLHF"),
    Repository("lm-sys/FastChat", "0e6d3e4beaab66f4d3f93db72541a4abab8af28d", "LLM fine-tuning"),
    Repository("meta-llama/llama-recipes", "faae2fd877995430906e1d0904131ecdaa89a604", "LLM fine-tuning"),
    Repository("hiyouga/LLaMA-Factory", "ff6d4d12eeb035d6ce06805a5733dd7b29f2ac30", "LLM fine-tuning/RLHF"),
    Repository("axolotl-ai-cloud/axolotl", "067b021c8b87a9e5e380b9173c704cf7340e30f5", "LLM fine-tuning/RLHF"),
)


def corpus_dest(explicit: str | None = None) -> str:
    return explicit or os.environ.get("TAPELINT_CORPUS") or DEFAULT_DEST


def mirror_root() -> str:
    return os.environ.get("TAPELINT_MIRRORS") or DEFAULT_MIRRORS


def mirror_of(repository: Repository) -> str:
    """The mirror's git directory: `repo` when bare, `repo/.git` when it has a work tree."""
    repo = os.path.join(mirror_root(), repository.slug.replace("/", "+"), "repo")
    work_tree_git = os.path.join(repo, ".git")
    return work_tree_git if os.path.isdir(work_tree_git) else repo


def torch_root() -> str | None:
    spec = importlib.util.find_spec("torch")  # locates without importing torch
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def projects(dest: str) -> list[Project]:
    """Every project of the corpus that is present under `dest`, then torch."""
    present: list[Project] = []
    for entry in (*REPOSITORIES, *SDISTS):
        path = os.path.join(dest, entry.project)
        if os.path.isdir(path):
            present.append(Project(entry.project, path, entry.source, entry.kind, entry.project in ISSUE12))
    torch = torch_root()
    if torch is not None:
        present.append(Project("torch", torch, "installed torch (in place)", "framework"))
    return present


def python_files(root: str) -> list[str]:
    """The `.py` files tapelint's own discovery finds under `root` (notebooks left out)."""
    from tapelint.files import discover

    return [path for path in discover([root]).files if path.endswith(".py")]


def _replace_folder(target: str, fill: Callable[[str], None]) -> None:
    """Fill a fresh temporary folder next to `target`, then swap it in, so a
    failed rebuild never leaves half a project behind."""
    parent = os.path.dirname(target)
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".building-", dir=parent)
    try:
        fill(staging)
        if os.path.exists(target):
            shutil.rmtree(target)
        os.rename(staging, target)
    finally:
        if os.path.exists(staging):
            shutil.rmtree(staging)


def build_sdist(sdist: Sdist, dest: str) -> str | None:
    """Download and unpack one sdist; a one-line reason when that fails."""
    downloads = os.path.join(dest, ".sdists")
    os.makedirs(downloads, exist_ok=True)
    spec = f"{sdist.name}=={sdist.version}"
    archive = _find_archive(downloads, sdist)
    if archive is None:
        done = subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:", "-d", downloads, spec],
            capture_output=True,
            text=True,
        )
        archive = _find_archive(downloads, sdist)
        if done.returncode != 0 or archive is None:
            last = (done.stderr.strip().splitlines() or ["no archive"])[-1]
            return f"pip download {spec} failed: {last}"

    def unpack(staging: str) -> None:
        with tarfile.open(archive) as tar:
            tar.extractall(staging, filter="data")

    _replace_folder(os.path.join(dest, sdist.project), unpack)
    return None


def _find_archive(folder: str, sdist: Sdist) -> str | None:
    stems = {f"{sdist.name}-{sdist.version}", f"{sdist.name.replace('-', '_')}-{sdist.version}"}
    for name in sorted(os.listdir(folder)):
        if name.endswith(".tar.gz") and name[: -len(".tar.gz")] in stems:
            return os.path.join(folder, name)
    return None


def build_repository(repository: Repository, dest: str) -> str | None:
    """Check out the pinned commit from the mirror; a one-line reason when that fails."""
    git_dir = mirror_of(repository)
    if not os.path.isdir(git_dir):
        return f"no mirror at {git_dir}: fetch github:{repository.slug} first"
    known = subprocess.run(
        ["git", "--git-dir", git_dir, "cat-file", "-e", f"{repository.commit}^{{commit}}"], capture_output=True
    )
    if known.returncode != 0:
        return f"commit {repository.commit} is not in {git_dir}: fetch github:{repository.slug} again"

    try:
        _replace_folder(os.path.join(dest, repository.project),
                        lambda staging: _check_out(git_dir, repository, staging))
    except (RuntimeError, OSError) as error:
        return str(error)
    return None


def _check_out(git_dir: str, repository: Repository, staging: str) -> None:
    """Write the commit's kept files under `staging`. Snapshots lack blobs of
    4 MiB and more (datasets, weights), so `git archive` would fail on them:
    the files are read one by one with `git cat-file --batch` instead."""
    listing = subprocess.run(
        ["git", "--git-dir", git_dir, "ls-tree", "-r", "-z", repository.commit, "--", *repository.paths],
        capture_output=True,
        check=True,
    ).stdout.decode()
    wanted: list[tuple[str, str]] = []
    for entry in filter(None, listing.split("\0")):
        meta, path = entry.split("\t", 1)
        mode, kind, oid = meta.split()
        if kind == "blob" and mode.startswith("100") and os.path.basename(path).endswith(KEPT_SUFFIXES):
            wanted.append((oid, path))
    reader = subprocess.Popen(
        ["git", "--git-dir", git_dir, "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert reader.stdin is not None and reader.stdout is not None
    reader.stdin.write("".join(f"{oid}\n" for oid, _ in wanted).encode())
    reader.stdin.close()
    for _oid, path in wanted:
        header = reader.stdout.readline().split()
        if header[1:2] == [b"missing"]:
            continue  # too large for the snapshot
        data = reader.stdout.read(int(header[2]))
        reader.stdout.read(1)  # the newline after each object
        target = os.path.join(staging, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as handle:
            handle.write(data)
    if reader.wait() != 0:
        raise RuntimeError(f"git cat-file failed for {repository.slug}")


def print_table(rows: Sequence[Project]) -> None:
    total_files = total_lines = 0
    print(f"{'project':28} {'kind':26} {'files':>6} {'lines':>10}  source")
    for project in rows:
        files = python_files(project.path)
        lines = count_lines(files)
        if project.name != "torch":
            total_files, total_lines = total_files + len(files), total_lines + lines
        mark = " *" if project.issue12 else ""
        print(f"{project.name + mark:28} {project.kind:26} {len(files):6} {lines:10,}  {project.source}")
    print(f"{'total (without torch)':55} {total_files:6} {total_lines:10,}")
    print("* = issue 12's eight-repository speed corpus")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dest", help=f"corpus folder (default: $TAPELINT_CORPUS or {DEFAULT_DEST})")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="rebuild only these projects")
    parser.add_argument("--list", action="store_true", help="print the table of what is present; rebuild nothing")
    args = parser.parse_args(argv)
    dest = os.path.abspath(corpus_dest(args.dest))
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if os.path.commonpath([dest, here]) == here:
        sys.exit(f"error: the corpus must live outside the repository ({dest} is inside {here})")

    failures = 0
    if not args.list:
        wanted = set(args.only or ())
        for entry in (*REPOSITORIES, *SDISTS):
            if wanted and entry.project not in wanted:
                continue
            problem = build_repository(entry, dest) if isinstance(entry, Repository) else build_sdist(entry, dest)
            if problem:
                failures += 1
                print(f"skipped {entry.project}: {problem}")
        unknown = wanted - {entry.project for entry in (*REPOSITORIES, *SDISTS)}
        for name in sorted(unknown):
            failures += 1
            print(f"skipped {name}: not a corpus project")
    print(f"corpus at {dest}")
    print_table(projects(dest))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""TL901 unused-suppression."""

from __future__ import annotations

from tapelint.rules.base import Rule


class UnusedSuppression(Rule):
    """
    ## What it does
    Reports a suppression comment (`# noqa: TL001`, `# tapelint: ignore[...]`)
    that suppresses nothing: the finding it was written for is gone, it names
    a code that is no tapelint rule, or it names a rule that is not enabled.
    Only reported with `--report-unused-suppressions` (or
    `report-unused-suppressions = true`, or by selecting TL901). A bare
    `# noqa` is never reported, since it may be there for another tool.

    ## Why is this bad
    A stale suppression hides the next real hazard on that line. Removing it
    (the fix is safe: it deletes only the unused codes) keeps suppressions
    meaningful.

    ## Example

    ```python
    total += loss.item()  # noqa: TL003
    ```

    ## Use instead

    ```python
    total += loss.item()
    ```
    """

    code = "TL901"
    name = "unused-suppression"
    summary = "a suppression comment that suppresses nothing"

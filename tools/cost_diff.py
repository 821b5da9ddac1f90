"""The cost change of a pull request, per stack: base vs head offline previews, as Markdown.

    python -m tools.cost_diff --base DIR --head DIR [--out FILE]

Each DIR holds `<stack>.json`, the output of `python -m tools.preview --stack <stack> --json`
on that side. The result starts with `MARKER`, so the workflow finds and edits its own comment
instead of adding a new one on every push. A stack on one side only, a preview that failed, or
a base from before the cost output existed are reported as such, never as a zero.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

MARKER = "<!-- ecs-inference-cost -->"
POINTS = ("minimum", "steady", "maximum")


def read_side(directory: Path) -> dict[str, dict[str, Any]]:
    """stack -> preview document (a file that is not JSON becomes an error document)."""
    out: dict[str, dict[str, Any]] = {}
    if not directory.is_dir():
        return out
    for path in sorted(directory.glob("*.json")):
        try:
            doc = json.loads(path.read_text() or "null")
        except json.JSONDecodeError as exc:
            doc = {"error": f"not JSON: {exc}"}
        out[path.stem] = doc if isinstance(doc, dict) else {"error": "empty preview output"}
    return out


def cost_of(doc: dict[str, Any] | None) -> dict[str, Any] | None:
    if not doc:
        return None
    cost = doc.get("cost") or (doc.get("outputs") or {}).get("cost")
    return cost if isinstance(cost, dict) and isinstance(cost.get("points"), dict) else None


def _money(value: float | None) -> str:
    return "—" if value is None else f"${value:,.0f}"


def _change(base: float | None, head: float | None) -> str:
    if base is None or head is None:
        return "—"
    delta = head - base
    if abs(delta) < 0.5:
        return "no change"
    pct = f" ({delta / base:+.1%})" if base else ""
    sign = "+" if delta > 0 else "-"
    return f"**{sign}${abs(delta):,.0f}**{pct}"


def _month(cost: dict[str, Any] | None, point: str) -> float | None:
    if cost is None:
        return None
    value = cost["points"].get(point, {}).get("usdPerMonth")
    return float(value) if isinstance(value, (int, float)) else None


def _categories(cost: dict[str, Any] | None, point: str) -> dict[str, float]:
    if cost is None:
        return {}
    return {
        k: float(v) * float(cost.get("hoursPerMonth", 730))
        for k, v in cost["points"].get(point, {}).get("byCategory", {}).items()
    }


def render(base: dict[str, dict[str, Any]], head: dict[str, dict[str, Any]]) -> str:
    """The comment body."""
    lines = [
        MARKER,
        "### Cost change (offline preview; USD per month at on-demand list prices)",
        "",
        "| stack | scale | base | head | change |",
        "|---|---|---:|---:|---:|",
    ]
    notes: list[str] = []
    details: list[str] = []
    for stack in sorted(set(base) | set(head)):
        b_doc, h_doc = base.get(stack), head.get(stack)
        b, h = cost_of(b_doc), cost_of(h_doc)
        for side, doc, c in (("base", b_doc, b), ("head", h_doc, h)):
            if doc is None:
                notes.append(f"`{stack}`: no stack on the {side} branch")
            elif c is None:
                reason = doc.get("error") or "the preview has no cost output"
                notes.append(f"`{stack}` ({side}): {str(reason).splitlines()[0][:200]}")
        for point in POINTS:
            bm, hm = _month(b, point), _month(h, point)
            lines.append(
                f"| `{stack}` | {point} | {_money(bm)} | {_money(hm)} | {_change(bm, hm)} |"
            )
        changed = {
            cat: (_categories(b, "steady").get(cat), _categories(h, "steady").get(cat))
            for cat in {*_categories(b, "steady"), *_categories(h, "steady")}
        }
        moved = {
            cat: pair
            for cat, pair in changed.items()
            if pair[0] is None or pair[1] is None or abs(pair[1] - pair[0]) >= 0.5
        }
        if b is not None and h is not None and moved:
            details += [
                "",
                f"`{stack}` at steady state, by category:",
                "",
                "| category | base | head | change |",
                "|---|---:|---:|---:|",
            ]
            for cat in sorted(moved):
                bv, hv = moved[cat]
                details.append(f"| {cat} | {_money(bv)} | {_money(hv)} | {_change(bv, hv)} |")
    lines += details
    if notes:
        lines += ["", *[f"- {n}" for n in notes]]
    head_costs = [c for c in (cost_of(d) for d in head.values()) if c]
    if head_costs:
        first = head_costs[0]
        lines += [
            "",
            f"Prices as of {first.get('pricesAsOf', '?')}; assumptions: "
            + "; ".join(first.get("assumptions", [])),
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.cost_diff", description=__doc__)
    parser.add_argument("--base", type=Path, required=True, help="directory of base previews")
    parser.add_argument("--head", type=Path, required=True, help="directory of head previews")
    parser.add_argument("--out", type=Path, help="write the Markdown here (default stdout)")
    args = parser.parse_args(argv)
    head = read_side(args.head)
    if not head:
        print(f"{args.head}: no <stack>.json previews", file=sys.stderr)
        return 2
    text = render(read_side(args.base), head)
    if args.out:
        args.out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

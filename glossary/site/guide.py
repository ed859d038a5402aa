"""The "What should I use?" page of each language, generated from the result files.

``<lang>/guide.md`` answers a reader's question from the measurements, never from hand-written
numbers:

1. a warning that every figure is measured at toy scale (the zoo's tiny models on a CPU, read
   from each result's provenance), and the one rule that picks the setting shown for each
   technique (:mod:`glossary.site.picks`);
2. by goal (:data:`GOALS`: fewer steps, a cheaper network per step, less memory, more
   throughput, several devices, steadier training): the techniques that serve it, each with its
   picked setting, its speedup and quality ratio with their 95% intervals against its own
   baseline, and its matched-cost control, sorted into recommended, not settled and not
   recommended with the reasons (:func:`glossary.site.picks.verdict`);
3. by quality budget: what the stacking study (one shared baseline) found fastest within each
   budget, then each technique's fastest setting within it on its own baseline.

The goals are a classification of what each technique acts on (which reader's question it
answers); the memory goal also takes every technique whose result states a memory ratio. Words
come from the ``guide`` catalog (``glossary/locale/<lang>/LC_MESSAGES/guide.po``) and the
techniques' own catalogs; techniques are named by their entry's term.
"""

from __future__ import annotations

from collections.abc import Sequence

from glossary.model import Entry
from glossary.resulttext import ResultText
from glossary.site import picks as rule
from glossary.site import stackdata
from glossary.site.context import Context
from glossary.site.formatting import ratio, ratio_with, times
from glossary.site.markdown import admonition, escape_markdown, escape_text, heading
from glossary.site.results import Result
from glossary.site.urls import sorted_entries

PAGE = "guide"
DOMAIN = "guide"
GOALS: dict[str, tuple[str, ...]] = {
    "fewer-steps": (
        "scheduler-tradeoff",
        "timestep-distillation",
        "consistency-latent-diffusion",
        "accelerate-method",
        "grid-search",
        "classifier-guidance",
    ),
    "cheaper-network": (
        "feature-caching",
        "pruning",
        "low-rank-inference",
        "conv-fusion",
        "mixture-of-experts",
    ),
    "less-memory": ("gradient-checkpointing",),
    "more-throughput": ("async-pipeline", "conv-fusion", "tpu-deployment"),
    "several-devices": ("async-pipeline", "tpu-deployment"),
    "training": ("stochastic-reparameterization",),
}
"""Which techniques answer which goal (the memory goal adds every result with a memory ratio)."""
CALLS = ("use", "unsettled", "avoid")


def _text(lang: str) -> ResultText:
    return ResultText(DOMAIN, lang)


def toy_scale(result: Result) -> bool:
    """Whether a result was measured on the project's zoo (it loaded zoo weights)."""
    return any(str(path).startswith("reference/zoo/") for path in result["provenance"]["weights"])


def budgets(ctx: Context) -> tuple[float, ...]:
    """The quality budgets: the stacking study's, else :data:`glossary.site.picks.BUDGETS`."""
    study = ctx.results.composites.get(stackdata.SLUG)
    found = tuple(stackdata.budgets(study)) if study else ()
    return found or rule.BUDGETS


def members(goal: str, ctx: Context) -> list[Entry]:
    """The measured techniques of ``goal``."""
    slugs = set(GOALS.get(goal, ()))
    if goal == "less-memory":
        for slug, result in ctx.results.by_slug.items():
            if (result["headline"] or {}).get("memory_ratio") is not None:
                slugs.add(slug)
    return [
        e for e in ctx.glossary.techniques() if e.slug in slugs and e.slug in ctx.results.by_slug
    ]


def unclassified(ctx: Context) -> list[Entry]:
    """Measured techniques that no goal names (listed under their own heading)."""
    named = {slug for slugs in GOALS.values() for slug in slugs}
    return [
        e
        for e in ctx.glossary.techniques()
        if e.slug in ctx.results.by_slug
        and e.slug not in named
        and (ctx.results.by_slug[e.slug]["headline"] or {}).get("memory_ratio") is None
    ]


# --------------------------------------------------------------------------------- phrases


def term(entry: Entry, lang: str) -> str:
    """The entry's term, linked to its page."""
    return f"[{escape_text(entry.term(lang))}](terms/{entry.slug}.md)"


def setting(p: rule.Pick, lang: str) -> str:
    """The picked configuration, in the technique's own words."""
    return escape_text(ResultText(p.slug, lang).config(p.row["config"]))


def baseline_name(p: rule.Pick, lang: str) -> str:
    """The configuration the speedup is measured against."""
    base = p.speed_baseline or p.baseline
    if base is None:
        return "—"
    return escape_text(ResultText(p.slug, lang).config(base["config"]))


def speed_phrase(p: rule.Pick, lang: str) -> str:
    """``speedup 1,75× [1,60–1,85] over its baseline (DDIM, 50 steps)``."""
    if p.speedup is None:
        return _text(lang).message("guide.speed-none")
    params = {
        "speedup": times(p.speedup, p.speedup_interval, lang),
        "baseline": baseline_name(p, lang),
    }
    return _text(lang).message("guide.speed", params)


def quality_phrase(p: rule.Pick, lang: str) -> str:
    """``FDD ratio 1,07 [1,02–1,12] (lower is better)``, or that none was measured."""
    text = _text(lang)
    if p.quality is None:
        return text.message("guide.quality-none")
    metric = ResultText(p.slug, lang).metric(p.quality.metric)
    params = {
        "metric": escape_text(metric),
        "ratio": ratio_with(p.quality.ratio, p.quality.interval, lang),
        "better": text.message(f"guide.better-{p.quality.better}"),
    }
    return text.message("guide.quality", params)


def memory_phrase(p: rule.Pick, lang: str) -> str:
    """``15,4× less memory than its baseline``, or ``3,88× the memory of its baseline``."""
    saving, text = p.memory_saving, _text(lang)
    if saving is None or p.memory_ratio is None:
        return text.message("guide.memory-none")
    if saving < 1:
        return text.message("guide.memory-more", {"factor": ratio(p.memory_ratio, lang) + "×"})
    return text.message("guide.memory", {"saving": ratio(saving, lang) + "×"})


def control_phrase(p: rule.Pick, lang: str) -> str:
    """The matched-cost control the setting was compared with, and what the comparison found."""
    text, own = _text(lang), ResultText(p.slug, lang)
    if not p.controls:
        return text.message("guide.control-none")
    parts: list[str] = []
    for control in p.controls:
        aim = control.aim
        measured = ratio_with(aim["measured"], aim["interval"], lang)
        params = {
            "control": escape_text(own.config(control.row["config"])),
            "state": own.state(aim["state"]),
            "aim": escape_text(own.aim(aim)),
            "measured": measured,
        }
        parts.append(text.message("guide.control", params))
    return text.message("guide.controls", {"list": "; ".join(parts)})


def control_short(p: rule.Pick, lang: str) -> str:
    """``beats its matched-cost control: yes`` (or no, inconclusive, none measured)."""
    verdict = rule.control_verdict(p)
    shown = ResultText("results", lang).message(f"site.control-{verdict}")
    return _text(lang).message("guide.control-short", {"verdict": shown})


def reasons(p: rule.Pick, found: Sequence[str], lang: str, limits: tuple[float, ...]) -> str:
    """Why a setting is not recommended (or not settled), one clause per reason."""
    text = _text(lang)
    params = {"first": ratio(limits[0], lang), "last": ratio(limits[-1], lang)}
    return "; ".join(text.message(f"guide.reason-{r}", params) for r in found)


def item(entry: Entry, p: rule.Pick, goal: str, lang: str, ctx: Context) -> str:
    """One technique under a goal: name, setting, figures, control and scale."""
    text = _text(lang)
    figures = [speed_phrase(p, lang), quality_phrase(p, lang)]
    if goal == "less-memory":
        figures.insert(0, memory_phrase(p, lang))
    line = f"- **{term(entry, lang)}** ({setting(p, lang)}): " + "; ".join(figures) + "."
    line += " " + control_phrase(p, lang)
    if toy_scale(ctx.results.by_slug[entry.slug]):
        line += " *" + text.message("guide.toy-tag") + "*"
    return line


# ------------------------------------------------------------------------------- sections


def header(lang: str, ctx: Context) -> list[str]:
    """Title, introduction, the toy-scale warning and the rule."""
    text = _text(lang)
    results = list(ctx.results.by_slug.values())
    threads = sorted({r["provenance"]["threads"] for r in results}) or [0]
    toy = [r for r in results if toy_scale(r)]
    limits = budgets(ctx)
    lines = ["# " + text.message("guide.title"), "", text.message("guide.intro"), ""]
    lines += [f"[{escape_text(text.message('guide.compare-link'))}](compare.md)", ""]
    lines += [admonition("warning", text.message("guide.toy-title")), ""]
    params = {"n": len(toy), "total": len(results), "threads": threads[-1]}
    lines += ["    " + escape_markdown(text.message("guide.toy", params)), ""]
    lines += [heading(2, text.message("guide.rule-title"), "rule"), ""]
    lines += [text.message("guide.rule", {"budget": ratio(limits[0], lang)}), ""]
    return lines


def goal_section(goal: str, lang: str, ctx: Context) -> list[str]:
    """The techniques of one goal, recommended first, each with its reasons."""
    text = _text(lang)
    limits = budgets(ctx)
    lines = [heading(3, text.message(f"guide.goal-{goal}"), f"goal-{goal}"), ""]
    lines += [text.message(f"guide.goal-{goal}-intro"), ""]
    sorted_calls: dict[str, list[str]] = {call: [] for call in CALLS}
    for entry in sorted_entries(members(goal, ctx), lang):
        p = rule.pick(entry.slug, ctx.results.by_slug[entry.slug], limits[0])
        if p is None:
            continue
        call, why = rule.verdict(p, goal, limits)
        line = item(entry, p, goal, lang, ctx)
        if why:
            line += " " + text.message("guide.why", {"reasons": reasons(p, why, lang, limits)})
        sorted_calls[call].append(line)
    if not any(sorted_calls.values()):
        return [*lines, text.message("guide.none-measured"), ""]
    for call in CALLS:
        if sorted_calls[call]:
            lines += [f"**{escape_text(text.message(f'guide.call-{call}'))}**", ""]
            lines += [*sorted_calls[call], ""]
    return lines


def _study_href(study: Result, row: stackdata.Row, ctx: Context) -> str:
    """Where a row of the study is shown: a pair or stack's row of the stacking page, a single
    technique's own page (the stacking page's short answer when it has none)."""
    if stackdata.is_stack(row):
        return f"stacking.md#{stackdata.anchor(row['id'])}"
    element = next(iter(stackdata.members(row)), "")
    slug = stackdata.element_slug(study, element)
    if slug and slug not in stackdata.NO_TERM_PAGE and ctx.glossary.get(slug) is not None:
        return f"terms/{slug}.md"
    return "stacking.md#answer"


def _study_line(study: Result, budget: float, lang: str, ctx: Context) -> str | None:
    """What the stacking study (one shared baseline) found fastest within ``budget``."""
    from glossary.site.stacking import study_text

    text, words = _text(lang), study_text(lang, ctx)
    best = stackdata.fastest_within(study, budget)
    single = stackdata.fastest_single_within(study, budget)
    if best is None and single is None:
        return None
    parts = []
    for found, key in ((best, "guide.study-stack"), (single, "guide.study-single")):
        if found is None:
            continue
        link = f"[{escape_text(stackdata.label(words, found))}]({_study_href(study, found, ctx)})"
        params = {
            "name": link,
            "speedup": times(
                stackdata.value(found, "speedup"), stackdata.span(found, "speedup"), lang
            ),
            "ratio": ratio_with(
                stackdata.value(found, "fd_ratio"), stackdata.span(found, "fd_ratio"), lang
            ),
        }
        parts.append(text.message(key, params))
    return "- " + text.message("guide.study", {"found": "; ".join(parts)})


def faster(p: rule.Pick) -> bool:
    """Whether a setting is shown to be faster than its baseline (its interval above 1×)."""
    if p.speedup is None:
        return False
    return p.speedup_interval[0] > 1 if p.speedup_interval else p.speedup > 1


def budget_section(budget: float, lang: str, ctx: Context) -> list[str]:
    """Within one quality budget: the study's answer, then each technique on its own baseline."""
    text = _text(lang)
    params = {"budget": ratio(budget, lang), "percent": round((budget - 1) * 100)}
    anchor = f"budget-{round((budget - 1) * 100)}"
    lines = [heading(3, text.message("guide.budget-title", params), anchor), ""]
    study = ctx.results.composites.get(stackdata.SLUG)
    found = _study_line(study, budget, lang, ctx) if study else None
    if found:
        lines += [found, ""]
    inside = []
    for entry in ctx.glossary.techniques():
        result = ctx.results.by_slug.get(entry.slug)
        p = rule.pick(entry.slug, result, budget) if result else None
        if p and p.rule == "budget" and p.quality and faster(p):
            inside.append((entry, p))
    inside.sort(key=lambda pair: -(pair[1].speedup or 0.0))
    if not inside:
        return [*lines, text.message("guide.budget-none"), ""]
    lines += [text.message("guide.budget-each"), ""]
    for entry, p in inside:
        figures = "; ".join(
            [speed_phrase(p, lang), quality_phrase(p, lang), control_short(p, lang)]
        )
        lines.append(f"1. **{term(entry, lang)}** ({setting(p, lang)}): {figures}.")
    return [*lines, ""]


def guide_page(lang: str, ctx: Context) -> str:
    """The whole page in ``lang``."""
    text = _text(lang)
    lines = header(lang, ctx)
    if not ctx.results.by_slug:
        return "\n".join([*lines, text.message("guide.none-measured"), ""])
    lines += [heading(2, text.message("guide.goals-title"), "goals"), ""]
    for goal in GOALS:
        lines += goal_section(goal, lang, ctx)
    rest = unclassified(ctx)
    if rest:
        lines += [heading(3, text.message("guide.goal-other"), "goal-other"), ""]
        for entry in sorted_entries(rest, lang):
            p = rule.pick(entry.slug, ctx.results.by_slug[entry.slug])
            if p is not None:
                lines.append(item(entry, p, "other", lang, ctx))
        lines.append("")
    lines += [heading(2, text.message("guide.budgets-title"), "budgets"), ""]
    lines += [text.message("guide.budgets-intro"), ""]
    for budget in budgets(ctx):
        lines += budget_section(budget, lang, ctx)
    return "\n".join(lines).rstrip() + "\n"

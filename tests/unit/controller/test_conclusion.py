"""The campaign's end in two or three sentences (fleetopt.analysis.conclusion): what was decided, what each host resolves, what
would decide the rest; at the top of report.md and report.html and as the report task's last lines."""
import argparse
import json
import math
import shutil

import pytest

from fleetopt.analysis import conclusion
from fleetopt.report import write
from fleetopt.analysis.summary import build_summary
from helpers import ROOT
from summary_cells import cell, trials

KEPT = ROOT / "docs" / "campaigns" / "h200-sglang-0.5.16"
CPU_HOST = {"host": {"cpu_model": "EPYC", "cpu_count": 2, "gpu_count": 0}}
DESIGN = {"launches": 2, "order": "counterbalanced (ABBA)", "aa": True}
# Output tok/s at concurrency 1 of a quiet tier-1 campaign on the embedded default, per launch (issue 32): trials
# within a launch agree within a few percent, launches of one configuration differ by 20-60 %.
CPU_LAUNCHES = {
    "baseline": ((295, 304, 280, 268), (214, 194, 191, 197)),
    "baseline_aa": ((272, 262, 255, 306), (248, 241, 219, 181)),
    "torch_compile": ((260, 231, 256, 282), (432, 406, 354, 424)),
}


def kept_campaign(tmp_path, drop=()):
    """A copy of the kept H200 campaign's cells, less the variants in `drop`."""
    campaign = tmp_path / "results" / "h200-sglang-0.5.16"
    shutil.copytree(KEPT / "cells", campaign / "cells")
    for variant in drop:
        for path in (campaign / "cells" / "localhost").glob("%s.*json" % variant):
            path.unlink()
    return campaign


def run_report(campaign, capsys, min_effect=None):
    """fleetopt report on the campaign: (summary.json, report.md, report.html, what it printed)."""
    code = write.main(argparse.Namespace(campaign_dir=str(campaign), latest_link=None, verdict_metric=None,
                                          confidence=None, min_effect=min_effect, fail_on_host_trouble=False))
    assert code == 0
    return (json.loads((campaign / "summary.json").read_text()), (campaign / "report.md").read_text(),
            (campaign / "report.html").read_text(), capsys.readouterr().out)


def launches(variant, per_launch, concurrency=1, **extra):
    return [cell(variant, levels=trials(concurrency, *outputs), host="cpu", launch_number=i + 1,
                 launches=len(per_launch), design=DESIGN, provenance=CPU_HOST, **extra)
            for i, outputs in enumerate(per_launch)]


def cpu_campaign(per_variant, tmp_path, min_effect=5.0):
    cells = [c for variant, per_launch in per_variant.items() for c in launches(variant, per_launch)]
    return build_summary(tmp_path / "cpu", cells, min_effect_pct=min_effect)


def test_the_kept_gpu_campaign_says_the_gate_held_its_verdicts_back_and_what_would_decide_them():
    summary = json.loads((KEPT / "summary.json").read_text())
    decided, resolves, rest = conclusion.conclusion(summary)
    assert decided == ("Of 6 optimizations, 1 crashed, 3 not applicable and 2 inconclusive (the A/A gate held back "
                       "1 regressed); nothing to recommend: keep the baseline.")
    assert resolves == ("On localhost the A/A (the baseline against itself) says it resolves changes of 48.5 % or "
                        "more, against the campaign's minimum effect of 5.0 %, so the A/A gate held its verdicts back.")
    # Its launch means spread far more than their 3 trials explain (15.4 % against 7.8 % / sqrt(3)), so the advice is
    # not more trials; the launches that would resolve 5 % are planned from that spread over its 4 configurations
    # launched twice at c=32. The host has a GPU (its board power was read): the other host proposed is a quieter one.
    assert "launch means vary by 15.4 % from launch to launch while the trials within a launch vary by 7.8 % (c=32)" \
        in rest
    needed = conclusion.launches_to_resolve(15.356653171155846, 5.0, 4)
    assert needed > conclusion.PRACTICAL_LAUNCHES
    assert "more trials will not help, and resolving 5.0 %% would take about %d launches per variant" % needed in rest
    assert "a quieter host (nothing else running on it) would resolve more" in rest and "GPU host" not in rest
    # A report file lives in the campaign's folder, wherever that was moved: it names no path.
    assert "`fleetopt report <this campaign's folder> --min-effect 48.5`" in rest


def test_judged_at_what_the_host_resolves_every_verdict_is_decided_and_the_end_says_so_everywhere(tmp_path, capsys):
    summary, markdown, html, printed = run_report(kept_campaign(tmp_path), capsys, min_effect=48.5)
    sentences = conclusion.conclusion(summary)
    assert sentences == [
        "Of 6 optimizations, 1 regressed, 1 neutral, 1 crashed and 3 not applicable; nothing to recommend: keep the "
        "baseline.",
        "On localhost the A/A (the baseline against itself) says it resolves changes of 48.5 % or more, against the "
        "campaign's minimum effect of 48.5 %, so its verdicts stand."]
    # report.md opens with them, report.html too, and the report task's output (the play's last lines) ends with them.
    assert markdown.split("\n")[:4] == ["# fleetopt campaign h200-sglang-0.5.16", "", " ".join(sentences), ""]
    assert '<p id="conclusion" class="conclusion">%s</p>' % " ".join(sentences).replace("'", "&#39;") in html
    assert html.index('id="conclusion"') < html.index('id="recommendation"')
    tail = printed.rstrip("\n").split("\n\n")[-1]
    assert " ".join(tail.split()) == " ".join(sentences)
    assert all(len(line) <= write.TERMINAL_WIDTH for line in tail.splitlines())


def test_without_an_aa_nothing_says_what_the_host_resolves_and_the_end_asks_for_one(tmp_path, capsys):
    summary, markdown, html, _printed = run_report(kept_campaign(tmp_path, drop=("baseline_aa",)), capsys)
    decided, resolves, rest = conclusion.conclusion(summary)
    assert decided == ("Of 6 optimizations, 1 regressed, 1 crashed, 3 not applicable and 1 inconclusive; nothing to "
                       "recommend: keep the baseline.")
    assert resolves == "On localhost no A/A ran (`-e aa=false`), so nothing says what its noise resolves."
    assert rest == ("To decide the rest: run with the A/A (without `-e aa=false`) to learn what localhost resolves; "
                    "more launches (campaign_launches: 4) narrow every interval.")
    assert markdown.split("\n")[2] == " ".join([decided, resolves, rest])
    # report.html sets what the Markdown puts in backticks as code.
    assert "On localhost no A/A ran (<code>-e aa=false</code>), so nothing says" in html


def test_a_crashed_variant_is_decided_and_leaves_nothing_to_decide_even_under_the_gate(tmp_path, capsys):
    kept = ("baseline", "baseline_aa", "planned_oom")
    campaign = kept_campaign(tmp_path, drop=[p.name.split(".")[0] for p in (KEPT / "cells" / "localhost").iterdir()
                                             if p.name.split(".")[0] not in kept])
    summary, _markdown, _html, _printed = run_report(campaign, capsys)
    assert summary["aa"][0]["gate"]  # the A/A is not neutral at 5 %, but there is no verdict to hold back
    sentences = conclusion.conclusion(summary)
    assert sentences[0] == "Of 1 optimization, 1 crashed; nothing to recommend: keep the baseline."
    assert len(sentences) == 2 and "the A/A gate held its verdicts back" in sentences[1]


def test_an_improved_variant_is_what_the_end_recommends(tmp_path, capsys):
    quiet = (1.0, 1.003, 0.997)
    campaign = tmp_path / "results" / "c1"
    for variant, factor in (("baseline", 1.0), ("baseline_aa", 1.0), ("fast", 1.2), ("same", 1.0)):
        c = cell(variant, levels=[lv for conc in (1, 4) for lv in trials(conc, *(100.0 * conc * factor * f
                                                                                 for f in quiet))],
                 provenance={"engine_version": "0.32.0+cpu", "host": {"gpu_count": 0}})
        path = campaign / "cells" / "h1" / ("%s.json" % variant)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(c))
    summary, markdown, _html, _printed = run_report(campaign, capsys, min_effect=3.0)
    decided, resolves = conclusion.conclusion(summary)
    assert decided == ("Of 2 optimizations, 1 improved and 1 neutral; recommended: fast (measured: a single "
                       "optimization, nothing to stack).")
    assert resolves.endswith("against the campaign's minimum effect of 3.0 %, so its verdicts stand.")
    assert summary["host_gpus"] == {"h1": 0}


def test_on_the_embedded_default_the_spread_is_in_the_launch_so_a_gpu_or_a_quieter_host_would_decide(tmp_path):
    summary = cpu_campaign(CPU_LAUNCHES, tmp_path)
    assert [v["verdict"] for v in summary["variants"] if v["variant"] == "torch_compile"] == ["inconclusive"]
    noise = conclusion.noise_of(summary, "cpu")
    assert noise["launch_cv_pct"] > 20.0 > 10.0 > noise["trial_cv_pct"] and conclusion.where_noise(noise) == "launch"
    assert noise["configurations"] == 3 and noise["trials_per_launch"] == 4.0
    needed = conclusion.launches_to_resolve(noise["launch_cv_pct"], 5.0, 3)
    assert needed > conclusion.PRACTICAL_LAUNCHES
    rest = conclusion.next_sentence(summary)
    assert "so more trials will not help, and resolving 5.0 %% would take about %d launches per variant" % needed in rest
    assert "a quieter host (nothing else on its cores) or a GPU host would resolve more" in rest
    assert "--min-effect %.1f`" % summary["aa"][0]["resolves_pct"] in rest


def test_where_a_few_more_launches_would_resolve_the_minimum_effect_the_end_names_them(tmp_path):
    summary = cpu_campaign(CPU_LAUNCHES, tmp_path, min_effect=80.0)
    needed = conclusion.launches_to_resolve(conclusion.noise_of(summary, "cpu")["launch_cv_pct"], 80.0, 3)
    assert 2 < needed <= conclusion.PRACTICAL_LAUNCHES
    rest = conclusion.next_sentence(summary)
    assert "more launches will: about %d per variant (campaign_launches: %d) would resolve 80.0 %%" % (
        needed, needed) in rest
    assert "GPU host" not in rest


def test_the_launches_planned_are_those_with_which_an_aa_comes_out_neutral_4_times_in_5():
    # cv 10 %: a launch mean's log spread s = sqrt(ln 1.01) = 0.0998; within +-20 % (ln 1.2 = 0.182) with 2
    # configurations: (t(0.95, L - 1) + 1.2816) s sqrt(2 / L) is 0.190 at L = 6 (t 2.015) and 0.172 at L = 7 (t 1.943).
    assert conclusion.launches_to_resolve(10.0, 20.0, 2) == 7
    # More configurations launched in the same rounds give the pooled spread more degrees of freedom; a wider band or a
    # quieter host needs fewer launches, a noisier one more.
    assert conclusion.launches_to_resolve(10.0, 20.0, 3) == 6
    assert conclusion.launches_to_resolve(10.0, 40.0, 2) == 4
    assert conclusion.launches_to_resolve(20.0, 20.0, 2) == 22
    assert conclusion.launches_to_resolve(50.0, 1.0, 2) is None


def test_where_the_trials_of_a_launch_spread_the_end_asks_for_a_quieter_host_or_more_trials(tmp_path):
    noisy = {"baseline": ((100, 130, 80, 110), (90, 125, 105, 95)),
             "baseline_aa": ((120, 85, 100, 105), (95, 130, 80, 100)),
             "v": ((110, 90, 125, 95), (100, 85, 120, 105))}
    summary = cpu_campaign(noisy, tmp_path)
    noise = conclusion.noise_of(summary, "cpu")
    assert conclusion.where_noise(noise) == "trial"
    rest = conclusion.next_sentence(summary)
    assert "the trials within a launch vary by %.1f %%" % noise["trial_cv_pct"] in rest
    assert ("so more trials per launch (campaign_bench_trials), a quieter host (nothing else on its cores) or a GPU "
            "host would narrow the intervals") in rest
    # The launch means spread no more than their trials explain, and a launch mean is taken as that noisy: no count of
    # launches is promised from the launch spread alone.
    assert "campaign_launches" not in rest


@pytest.mark.parametrize("counts,held,expected", [
    ({"improved": 2}, {}, "Of 2 optimizations, 2 improved"),
    ({"inconclusive": 3}, {"improved": 1, "regressed": 2},
     "Of 3 optimizations, 3 inconclusive (the A/A gate held back 1 improved and 2 regressed)"),
    ({"no_effect": 1, "mixed": 1, None: 1}, {},
     "Of 3 optimizations, 1 mixed (better at some levels, worse at others), 1 had no effect (the server ran the "
     "baseline's configuration) and 1 not measured"),
])
def test_the_decided_sentence_counts_every_verdict(counts, held, expected):
    variants = [{"variant": "baseline", "host": "h", "verdict": "baseline"}]
    before = [v for v, n in held.items() for _ in range(n)]
    for verdict, n in counts.items():
        for i in range(n):
            entry = {"variant": "%s%d" % (verdict, i), "host": "h", "verdict": verdict}
            if verdict == "inconclusive" and before:
                entry["verdict_before_aa"] = before.pop()
            variants.append(entry)
    assert conclusion.decided_sentence({"variants": variants}) == expected + "."
    assert conclusion.decided_sentence({"variants": variants, "recommendation": {"stack": []}}) == \
        expected + "; nothing to recommend: keep the baseline."


def test_every_host_gets_its_own_clause_and_its_own_advice():
    summary = json.loads((KEPT / "summary.json").read_text())
    other = [dict(v, host="b") for v in summary["variants"] if v["variant"] == "planted_one_request"]
    for v in other:
        v.pop("verdict_before_aa"), v.update(verdict="inconclusive")
    summary["variants"] += other
    summary["aa"].append({"host": "b", "aa": False, "verdict": None, "gate": None, "resolves_pct": None})
    decided, resolves, rest = conclusion.conclusion(summary)
    assert decided.startswith("Of 7 verdicts (optimizations on 2 hosts), 1 crashed, 3 not applicable and 3 "
                              "inconclusive (the A/A gate held back 1 regressed)")
    assert resolves.startswith("On localhost the A/A") and "; on b no A/A ran" in resolves
    assert rest.startswith("To decide the rest: run with the A/A (without `-e aa=false`) to learn what b resolves; ")
    assert "; on localhost the launch means vary by 15.4 %" in rest


def test_wrapped_for_a_terminal_a_number_keeps_its_unit_and_a_command_stays_whole():
    summary = json.loads((KEPT / "summary.json").read_text())
    lines = conclusion.conclusion_text(summary, width=60, folder="/srv/results/h200").splitlines()
    assert len(lines) > 6 and all(len(line) <= 60 for line in lines if "`" not in line)
    assert not any(line.startswith("%") for line in lines)
    # On the terminal the command names the folder the report was made from.
    assert any("`fleetopt report /srv/results/h200 --min-effect 48.5`" in line for line in lines)
    assert " ".join(" ".join(lines).split()) == " ".join(conclusion.conclusion(summary, folder="/srv/results/h200"))


def test_with_one_launch_each_the_aas_two_launches_show_where_the_noise_is(tmp_path):
    # One launch per configuration: the trials are the unit, and the A/A's launch 10 % away from the baseline's,
    # trials 1 % apart, says the spread is in the launch: a launch mean's CV of about 10 / sqrt(2) %.
    tight = (1.0, 1.01, 0.99)
    cells = [cell(variant, host="cpu", provenance=CPU_HOST, levels=trials(1, *(100.0 * factor * f for f in tight)))
             for variant, factor in (("baseline", 1.0), ("baseline_aa", 1.1), ("v", 1.05))]
    summary = build_summary(tmp_path / "one", cells, min_effect_pct=5.0)
    noise = conclusion.noise_of(summary, "cpu")
    assert noise["launch_cv_pct"] is None and conclusion.where_noise(noise) == "launch"
    assert conclusion.launch_spread(noise) == pytest.approx(10.0 / math.sqrt(2.0))
    needed = conclusion.launches_to_resolve(10.0 / math.sqrt(2.0), 5.0, 3)
    rest = conclusion.next_sentence(summary)
    assert "on cpu the A/A's two launches differ by 10.0 % while the trials within a launch vary by" in rest
    assert "so more trials will not help" in rest and ("about %d" % needed) in rest


def test_where_the_aa_resolves_the_minimum_effect_what_is_left_open_is_the_variants_own(tmp_path):
    # A quiet A/A, and a variant whose own trials spread by 20 %: its interval, not the host, leaves it open.
    quiet, wide = (1.0, 1.003, 0.997), (1.0, 1.2, 0.8)
    cells = [cell(variant, host="cpu", provenance=CPU_HOST, levels=trials(1, *(100.0 * f for f in spread)))
             for variant, spread in (("baseline", quiet), ("baseline_aa", quiet), ("noisy", wide))]
    summary = build_summary(tmp_path / "quiet", cells, min_effect_pct=5.0)
    assert summary["aa"][0]["gate"] is None and summary["aa"][0]["resolves_pct"] <= 5.0
    decided, resolves, rest = conclusion.conclusion(summary)
    assert decided == "Of 1 optimization, 1 inconclusive." and resolves.endswith("so its verdicts stand.")
    assert rest == ("To decide the rest: on cpu the A/A resolves the minimum effect, so what is left open is the "
                    "variants' own: an effect near the minimum effect, or a spread of their own wider than the "
                    "baseline's; more launches (campaign_launches: 2) narrow their intervals.")


def test_an_aa_that_tells_no_resolution_says_why_and_what_would_tell_it(tmp_path):
    quiet = (1.0, 1.003, 0.997)
    measured = [cell(v, host="cpu", provenance=CPU_HOST, levels=trials(1, *(100.0 * f for f in quiet)))
                for v in ("baseline", "v")]
    crashed = cell("baseline_aa", host="cpu", status="crashed", provenance=CPU_HOST,
                   failure={"failure_class": "cuda_oom"}, reason="the server ran out of memory")
    decided, resolves, rest = conclusion.conclusion(build_summary(tmp_path / "crash", measured + [crashed]))
    assert decided == "Of 1 optimization, 1 inconclusive (the A/A gate held back 1 neutral)."
    assert resolves == ("On cpu the A/A was crashed and tells no smallest change it resolves, and the A/A gate held "
                        "its verdicts back.")
    assert rest == ("To decide the rest: an A/A that measures every level with two trials or more (this one was "
                    "crashed) would tell what cpu resolves.")
    # On capacity without SLOs there is nothing to judge: the end asks for SLOs.
    summary = build_summary(tmp_path / "capacity", measured + [cell("baseline_aa", host="cpu", provenance=CPU_HOST,
                                                                    levels=trials(1, *(100.0 * f for f in quiet)))],
                            verdict_metric="capacity")
    decided, resolves, rest = conclusion.conclusion(summary)
    assert resolves == ("On cpu the A/A on capacity was inconclusive (a smallest resolvable change is not computed on "
                        "capacity), and the A/A gate held its verdicts back.")
    assert rest == ("To decide the rest: set SLOs (campaign_slo, or `fleetopt report --slo`) so that cpu's capacity "
                    "can be judged.")

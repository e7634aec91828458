"""What `tune --schedule`'s report says for given measurements: the table of every candidate's
ratio to plain per level, the recommendation and its lines, and the plot of the spreads."""

from __future__ import annotations

import pytest
from schedule_cases import CLOSE, RATIOS, SCHEDULE, ZERO_SCHEDULE, analysed

from trnspec_tools.tune.schedule_choice import deploy_line, set_line
from trnspec_tools.tune.schedule_report import bands_figure, markdown


def test_the_table_gives_every_candidate_at_every_level_its_ratio_spread_and_k_used(tmp_path):
    lines = markdown(analysed(tmp_path)).splitlines()
    table = [line for line in lines if line.startswith("| ")]
    assert table == [
        "| candidate | c=1 | c=8 | c=32 |",
        "| plain (tok/s) | 1.00x (100 tok/s) | 1.00x (400 tok/s) | 1.00x (800 tok/s) |",
        "| k=2 | 1.30x [1.25-1.35], k 2.00 | 1.20x [1.15-1.25], k 2.00"
        " | 1.05x [1.00-1.10], k 2.00 |",
        "| k=4 | 1.60x [1.50-1.70], k 3.50 | 1.10x [1.05-1.15], k 3.50"
        " | 0.92x [0.90-0.95], k 3.50 |",
        # no counters, no k used
        f"| {SCHEDULE} | 1.58x [1.55-1.60] | 1.21x [1.20-1.22] | 1.04x [1.03-1.06] |",
        f"| {ZERO_SCHEDULE} | 1.57x [1.56-1.59], k 2.50 | 1.20x [1.19-1.21], k 2.50"
        " | 0.97x [0.96-0.98], k 2.50 |",
    ]
    assert "- bands (batches per level): [[1, 1], [2, 8], [9, 32]]" in lines


def test_a_level_with_a_round_that_could_not_be_paired_is_a_dash_and_left_out_of_the_plot(
    tmp_path,
):
    """One round with errors at c=32: a spread over the other two would hide it (the A/B
    core gives the level no ratio)."""
    failed = {**RATIOS, "k=4": {**RATIOS["k=4"], 32: (0.9, None, 0.95)}}
    result = analysed(tmp_path, failed)
    [row] = [line for line in markdown(result).splitlines() if line.startswith("| k=4 ")]
    assert row.endswith("| 1.10x [1.05-1.15], k 3.50 | - |")
    lines = {c.get_label(): c.lines[0] for c in bands_figure(result).axes[0].containers}
    assert list(lines["k=4"].get_xdata()) == [1, 8]
    assert list(lines["k=2"].get_xdata()) == [1, 8, 32]


def test_the_recommendation_says_how_far_it_is_from_the_best_measured_at_each_level(tmp_path):
    result = analysed(tmp_path)
    md = markdown(result)
    assert f"## Recommendation\n\n**{SCHEDULE}**\n" in md
    assert "- c=1: 1.58x plain; best measured k=4 1.60x; chosen / best = 0.988\n" in md
    assert f"- c=8: 1.21x plain; best measured {SCHEDULE} 1.21x; chosen / best = 1.000\n" in md
    assert "- c=32: 1.04x plain; best measured k=2 1.05x; chosen / best = 0.990\n" in md
    assert "within the measured spread" not in md


def test_candidates_the_data_cannot_tell_apart_are_named_and_the_simplest_recommended(tmp_path):
    md = markdown(analysed(tmp_path, CLOSE))
    assert "**k=2**" in md
    assert (
        f"- within the measured spread of {SCHEDULE} at every level: k=2, {ZERO_SCHEDULE};"
        " the simplest of them is recommended (the data cannot tell them apart)\n"
    ) in md


@pytest.mark.parametrize(
    ("ratios", "verdict"),
    [
        (
            RATIOS,
            "0.97x [0.96-0.98] of plain at concurrency 32: it loses to a server without"
            " speculation, so this schedule is not recommended",
        ),
        (CLOSE, "1.01x [1.00-1.02] of plain at concurrency 32: at least as fast as plain there"),
    ],
    ids=["loses", "holds"],
)
def test_a_k0_band_is_reported_against_plain_at_its_level(tmp_path, ratios, verdict):
    note = f"- {ZERO_SCHEDULE}: its k=0 band (batches 9-32) measured {verdict}\n"
    assert note in markdown(analysed(tmp_path, ratios))


def test_the_override_line_is_the_base_then_the_candidates_items_checked_on_the_profile(tmp_path):
    seen = []

    def check(items, profile):
        seen.append((items, profile))
        return "num_speculative_tokens=4 exceeds the image's limit"

    result = analysed(tmp_path, check=check)
    items = ["max_num_seqs=32", "speculation.num_speculative_tokens=4"]
    items.append("speculation.k_schedule=[[1,1,4],[2,32,2]]")
    assert seen == [(items, "local-tiny")]
    md = markdown(result)
    assert f"render / bench --local: `{set_line(items)}`\n" in md
    assert f"deploy: `{deploy_line(items)}`\n" in md
    assert md.endswith(
        "check against profile local-tiny: num_speculative_tokens=4 exceeds the image's limit\n"
    )


def test_the_plot_draws_each_candidate_s_median_and_spread_per_level_the_recommended_bold(
    tmp_path,
):
    result = analysed(tmp_path)
    ax = bands_figure(result).axes[0]
    drawn = {c.get_label(): c for c in ax.containers}
    assert list(drawn) == ["k=2", "k=4", SCHEDULE, ZERO_SCHEDULE]
    line = drawn["k=4"].lines[0]
    assert list(line.get_xdata()) == [1, 8, 32]
    assert list(line.get_ydata()) == pytest.approx([1.6, 1.1, 0.92])
    widths = {name: c.lines[0].get_linewidth() for name, c in drawn.items()}
    assert widths == {"k=2": 1.0, "k=4": 1.0, SCHEDULE: 2.2, ZERO_SCHEDULE: 1.0}
    # the bars span each spread, lopsided where the rounds are
    [bars] = drawn[SCHEDULE].lines[2]
    low_high = [y for seg in bars.get_segments() for y in (seg[0][1], seg[1][1])]
    assert low_high == pytest.approx([1.55, 1.60, 1.20, 1.22, 1.03, 1.06])

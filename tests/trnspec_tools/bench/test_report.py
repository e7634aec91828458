"""bench.report: the client's own CPU next to the figures, and the warning (issue 14)."""

from __future__ import annotations

from trnspec_tools.bench.report import bench_markdown, client_cpu_warning

CFG = {"client_on_server_host": True, "cpu_count": 2}


def runs(fraction_of_one_core: float) -> list[dict]:
    return [
        {
            "arm": "target",
            "concurrency": 4,
            "tool_cpu_fraction_of_one_core": fraction_of_one_core,
            "tool_cpu_us_per_output_token": 40.0,
        }
    ]


def test_a_client_on_the_servers_host_using_more_than_a_few_percent_is_warned_about():
    warning = client_cpu_warning(runs(0.10), CFG)  # 10% of one core = 5% of a 2-CPU host
    assert warning is not None and "5.0% of its 2 CPUs" in warning


def test_a_light_client_or_one_on_another_host_is_not_warned_about():
    assert client_cpu_warning(runs(0.04), CFG) is None  # 2% of the host
    assert client_cpu_warning(runs(0.50), {**CFG, "client_on_server_host": False}) is None


def test_the_summary_shows_the_clients_cpu_and_the_warning():
    text = bench_markdown({"config": CFG, "runs": runs(0.10), "comparison": []})
    assert "40 us/token (10.0% of a core)" in text
    assert "**warning**: the client ran on the server's host" in text


def test_the_summary_says_in_which_order_the_arms_were_measured():
    order = [["target", 1], ["baseline", 1], ["baseline", 8], ["target", 8]]
    cfg = {**CFG, "compare": "local", "measurement_order": order}
    text = bench_markdown({"config": cfg, "runs": runs(0.0), "comparison": []})
    assert (
        "- baseline: `local`, measured in the order target c=1, baseline c=1, baseline c=8,"
        " target c=8\n" in text
    )


def test_a_run_without_a_baseline_or_written_before_alternation_names_no_order():
    alone = {**CFG, "compare": None, "measurement_order": [["target", 1]]}
    before = {**CFG, "compare": "http://b:8000"}
    for cfg in (alone, before):
        text = bench_markdown({"config": cfg, "runs": runs(0.0), "comparison": []})
        assert "measured in the order" not in text

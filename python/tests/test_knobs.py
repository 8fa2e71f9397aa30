"""The knob tables (g5sim.knobs(): g5sim/knobs.hpp and g5sim/design.hpp) and the Python functions
that take them: every knob a keyword of the functions its row names, each value checked as the
command line checks its flag, and nothing taken that no row declares."""

import inspect

import pytest

import g5sim

KNOBS = g5sim._g5sim.knobs()


@pytest.mark.parametrize("use,function", [("serve", g5sim.serve), ("search", g5sim.search),
                                          ("search_list", g5sim.search), ("sensitivity", g5sim.sensitivity),
                                          ("solve", g5sim.solve)])
def test_every_knob_is_a_keyword_of_the_functions_that_take_it(use, function):
    parameters = inspect.signature(function).parameters
    for knob in KNOBS:
        if knob[use] and knob["run_option"]:
            # A step's run option (micro_batches): simulate()'s keyword, taken with the others.
            assert knob["keyword"] in [o["name"] for o in g5sim._g5sim.run_options()]
            assert parameters["options"].kind == inspect.Parameter.VAR_KEYWORD
        elif knob[use]:
            assert knob["keyword"] in parameters, (use, knob["name"])
            assert parameters[knob["keyword"]].kind == inspect.Parameter.KEYWORD_ONLY


def test_the_docstrings_list_the_keywords_with_their_defaults():
    for knob in KNOBS:
        if knob["serve"]:
            assert f"    {knob['keyword']}" in g5sim.serve.__doc__, knob["name"]
    assert "[default: 256]" in g5sim.serve.__doc__


def test_serve_sweep_takes_every_sweep_axis_knob():
    axes = g5sim.serve_sweep.axes
    assert axes[:5] == ("chip", "model", "tp", "ep", "dp")
    assert sorted(axes[5:]) == sorted(k["keyword"] for k in KNOBS if k["sweep_axis"])


def test_a_value_is_checked_as_its_flag_checks_it():
    small = {"layers": 1, "concurrency": 1, "num_requests": 1, "input_len": 16, "output_len": 2}
    with pytest.raises(g5sim.ConfigError, match=r"^block_tokens: expected a whole number 1\.\.65536, got '0'$"):
        g5sim.serve("h100", "qwen2.5-1.5b", block_tokens=0, **small)
    with pytest.raises(g5sim.ConfigError, match=r"^block_tokens: expected a whole number, got '16'$"):
        g5sim.serve("h100", "qwen2.5-1.5b", block_tokens="16", **small)
    with pytest.raises(g5sim.ConfigError, match=r"^slo_tpot_ms: expected a number, got '30'$"):
        g5sim.serve("h100", "qwen2.5-1.5b", slo_tpot_ms="30", **small)
    with pytest.raises(g5sim.ConfigError, match="not a serve\\(\\) keyword \\(did you mean block_tokens\\?\\)"):
        g5sim.serve("h100", "qwen2.5-1.5b", block_token=16, **small)


def test_search_names_a_keyword_no_table_has():
    with pytest.raises(g5sim.ConfigError, match=r"^max_seq: not a search\(\) keyword \(did you mean max_seqs\?\)"):
        g5sim.search("h100", "qwen2.5-1.5b", concurrency=1, num_requests=1, input_len=16, output_len=2,
                     max_seq=[4, 8], layers=1)

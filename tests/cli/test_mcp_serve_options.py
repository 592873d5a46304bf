"""`mcp-serve`'s options reach the server through `ServeOptions`, grouped by what they
configure: an option no group takes would be dropped without a word."""

from dataclasses import fields

from premath.cli.mcp_serve import (
    DashboardOptions,
    HttpOptions,
    ServeOptions,
    ToolOptions,
    mcp_serve,
)

GROUPS = {"tools": ToolOptions, "http": HttpOptions, "dashboard": DashboardOptions}


def test_every_option_lands_in_one_group():
    taken = [field.name for kind in GROUPS.values() for field in fields(kind)]
    taken += [field.name for field in fields(ServeOptions) if field.name not in GROUPS]
    options = [param.name for param in mcp_serve.params if param.expose_value]
    assert sorted(taken) == sorted(options)


def test_the_groups_hold_what_click_parsed():
    context = mcp_serve.make_context(
        "mcp-serve", ["--transport", "streamable-http", "--bind", "127.0.0.1:0", "--live"]
    )
    built = ServeOptions.of(context.params)
    assert (built.transport, built.http.bind, built.dashboard.live, built.dashboard.observe) == (
        "streamable-http",
        "127.0.0.1:0",
        True,
        False,
    )
    assert built.tools.issues == ".premath/issues.jsonl"

"""The rules the tests keep, checked on their source: no test drives an event loop itself (the fault
proxy's own thread aside), and no test module imports from another (shared code lives in
tests/support/ or in fixtures). Each check is also shown to see a planted breach."""

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
# Its event loop runs in a thread of its own, so that a test blocked in a subprocess call cannot
# stall the proxied traffic.
OWN_LOOP = {TESTS / "faults" / "proxy.py"}
LOOP_DRIVERS = {"run", "new_event_loop", "get_event_loop"}


def loop_calls(source: str) -> list[str]:
    """`asyncio.run(...)`, `asyncio.new_event_loop()`, `<loop>.run_until_complete(...)` in `source`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            name, owner = node.func.attr, node.func.value
            on_asyncio = isinstance(owner, ast.Name) and owner.id == "asyncio"
            if name == "run_until_complete" or (on_asyncio and name in LOOP_DRIVERS):
                found.append(f"{node.lineno}: {ast.unparse(node.func)}")
    return found


def imported_test_modules(source: str) -> list[str]:
    """The test modules (`tests....test_x`) that `source` imports from."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        leaves = [name for name in names if name.startswith("tests.")]
        found += [f"{node.lineno}: {name}" for name in leaves if name.rsplit(".", 1)[-1].startswith("test_")]
    return found


def breaches(check: str) -> list[str]:
    by_name = {"loop": loop_calls, "imports": imported_test_modules}
    return [
        f"{path.relative_to(TESTS.parent)}:{breach}"
        for path in sorted(TESTS.rglob("*.py"))
        if check != "loop" or path not in OWN_LOOP
        for breach in by_name[check](path.read_text())
    ]


def test_no_test_drives_an_event_loop_itself() -> None:
    assert breaches("loop") == []


def test_no_test_module_imports_from_another() -> None:
    assert breaches("imports") == []


def test_the_checks_see_a_planted_breach() -> None:
    planted = (
        "import asyncio\n"
        "from tests.integration.stream.test_worker import offline\n"
        "import tests.unit.rules.test_arena\n"
        "from tests.support.games import make_game\n"
        "def test_x() -> None:\n"
        "    asyncio.run(main())\n"
        "    loop = asyncio.new_event_loop()\n"
        "    loop.run_until_complete(main())\n"
    )
    assert loop_calls(planted) == ["6: asyncio.run", "7: asyncio.new_event_loop", "8: loop.run_until_complete"]
    assert imported_test_modules(planted) == [
        "2: tests.integration.stream.test_worker",
        "3: tests.unit.rules.test_arena",
    ]

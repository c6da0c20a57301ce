"""The documentation against the code: the generated pages, the ConfigMap, the contract's
example, the runbooks, the layout and the commands, a page per rating system, a README a
newcomer reads in minutes, and links (in the pages, and in the code's docstrings and comments)
that stay in the repository."""

import ast
import io
import re
import shutil
import tokenize
from pathlib import Path
from typing import Annotated, Any

import pytest
import yaml
from prometheus_client import Counter
from pydantic import Field

from tests.support.rate import rate
from worker import docs, metrics
from worker.cli import build_parser, main
from worker.docs import CONFIGMAP, CONFIGURATION, METRICS, ROOT
from worker.engine.decoder import ErrorKind
from worker.rules.categories import Category
from worker.rules.interface import Kind, Skip
from worker.settings import WorkerSettings
from worker.stream.retry import OPERATIONS
from worker.systems.registry import BUILT_IN, BY_NAME

README = ROOT / "README.md"
DOCS = ROOT / "docs"
CHANGELOG = ROOT / "CHANGELOG.md"
PAGES = [README, CHANGELOG, *sorted(DOCS.rglob("*.md"))]
FENCE = re.compile(r"^```(\S*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def copy_of_the_checked_files(root: Path) -> Path:
    for path in (CONFIGURATION, METRICS, CONFIGMAP):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / path, root / path)
    return root


def base_configmap() -> dict[str, Any]:
    return docs.read_configmap(ROOT / CONFIGMAP)


# --- the generated pages


def test_the_committed_pages_and_the_configmap_are_not_stale() -> None:
    assert docs.check() == []
    assert main(["docs", "--check"]) == 0


def test_a_changed_setting_description_makes_the_configuration_page_stale() -> None:
    class Changed(WorkerSettings):
        batch_size: Annotated[int, Field(ge=1, le=20000, description="Something else.")] = 1000

    assert docs.stale_pages(ROOT, Changed) == [CONFIGURATION]
    assert "| `RATING_BATCH_SIZE` | `1000` | Something else. From 1 to 20000. |" in docs.render_configuration(Changed)


def test_a_changed_metric_help_makes_the_metrics_page_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics.IN_FLIGHT, "_documentation", "Games somewhere")
    assert docs.stale_pages(ROOT) == [METRICS]


def test_an_edited_or_missing_page_is_reported_and_rewritten(tmp_path: Path) -> None:
    root = copy_of_the_checked_files(tmp_path)
    page = root / METRICS
    page.write_text(page.read_text(encoding="utf-8").replace("Games fetched", "Games taken"), encoding="utf-8")
    (root / CONFIGURATION).unlink()
    assert docs.check(root) == [
        f"stale: {CONFIGURATION} (run: rating-worker docs)",
        f"stale: {METRICS} (run: rating-worker docs)",
    ]
    assert docs.write(root) == [CONFIGURATION, METRICS]
    assert docs.check(root) == []


def test_every_setting_is_described() -> None:
    undescribed = [name for name, field in WorkerSettings.model_fields.items() if not field.description]
    assert undescribed == []
    page = (ROOT / CONFIGURATION).read_text(encoding="utf-8")
    for name in WorkerSettings.model_fields:
        assert f"| `{docs.variable(name)}` |" in page


def test_the_secrets_are_the_three_secret_settings() -> None:
    secrets = {docs.variable(n) for n, f in WorkerSettings.model_fields.items() if docs.is_secret(f)}
    assert secrets == {"RATING_REDIS_URL", "RATING_REDIS_PASSWORD", "RATING_KAFKA_SASL_PASSWORD"}


def test_every_label_declares_the_values_the_code_produces() -> None:
    values = docs.label_values()
    assert docs.label_problems(docs.metrics_of(), values) == []
    assert values[metrics.GAMES_SKIPPED] == {"reason": tuple(s.value for s in Skip)}
    assert values[metrics.DEAD_LETTERS] == {"kind": tuple(k.value for k in ErrorKind)}
    assert values[metrics.CHANGES_PUBLISHED] == {
        "kind": tuple(k.value for k in Kind),
        "category": tuple(dict.fromkeys(c for spec in BUILT_IN for c in spec.rules.categories)),  # the arena's first
    }
    assert values[metrics.CHANGES_PUBLISHED]["category"][:3] == tuple(c.value for c in Category)
    assert values[metrics.RETRIES] == {
        "operation": tuple(op.label for op in OPERATIONS),
        "dependency": ("kafka", "redis"),
    }
    assert values[metrics.REDIS_SECONDS] == {"operation": ("read", "apply", "ack")}
    page = (ROOT / METRICS).read_text(encoding="utf-8")
    for metric in docs.metrics_of():
        assert f"| `{docs.exposed_name(metric)}` |" in page


def test_a_label_without_values_is_reported() -> None:
    counter = Counter("rating_example_total", "An example", ["colour"], registry=None)
    assert docs.label_problems([counter], {}) == ["rating_example_total: label colour declares no values"]
    assert docs.label_problems([counter], {counter: {"shade": ("dark",)}}) == [
        "rating_example_total: label colour declares no values",
        "rating_example_total: values declared for no label shade",
    ]


# --- the ConfigMap


def test_the_configmap_check_catches_a_missing_setting() -> None:
    data = base_configmap()
    del data["RATING_BATCH_SIZE"]
    assert docs.configmap_problems(data) == ["RATING_BATCH_SIZE: missing (its default: '1000')"]


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        ("RATING_BATCH_SIZE", "500", "RATING_BATCH_SIZE: '500', but its default is '1000'"),
        ("RATING_BATCH_SIZE", "many", "RATING_BATCH_SIZE: 'many' is not a valid value"),
        ("RATING_BATCH_SIZE", 1000, "RATING_BATCH_SIZE: 1000 is not a string (quote it)"),
        ("RATING_REDIS_URL", "redis://r:6379/0", "RATING_REDIS_URL: a secret, which belongs in the Secret "),
        ("RATING_NO_SUCH_THING", "1", "RATING_NO_SUCH_THING: not a setting of the worker"),
        ("RATING_REDIS_SENTINELS", "s:26379", "RATING_REDIS_SENTINELS: unset by default, so not in the base"),
        ("RATING_REDIS_SENTINEL_SERVICE", "mymaster", "RATING_REDIS_SENTINEL_SERVICE: unset by default"),
        ("RATING_KAFKA_BOOTSTRAP_SERVERS", "localhost:9092", "RATING_KAFKA_BOOTSTRAP_SERVERS: 'localhost:9092', but"),
    ],
)
def test_the_configmap_check_catches_a_wrong_entry(key: str, value: object, problem: str) -> None:
    data = {**base_configmap(), key: value}
    (found,) = docs.configmap_problems(data)
    assert found.startswith(problem)


def test_the_configmap_check_reads_values_as_the_settings_do() -> None:
    data = {**base_configmap(), "RATING_PUBLICATION_LEASE_SECONDS": "60.0", "RATING_KAFKA_SSL_CHECK_HOSTNAME": "True"}
    assert docs.configmap_problems(data) == []


def test_check_reports_the_configmap_with_its_path(tmp_path: Path) -> None:
    root = copy_of_the_checked_files(tmp_path)
    configmap = root / CONFIGMAP
    lines = configmap.read_text(encoding="utf-8").splitlines(keepends=True)
    configmap.write_text("".join(line for line in lines if "RATING_STALL_SECONDS" not in line), encoding="utf-8")
    assert docs.check(root) == [f"{CONFIGMAP}: RATING_STALL_SECONDS: missing (its default: '180')"]


# --- the hand-written pages against the code


def section(text: str, heading: str) -> str:
    start = text.index(f"\n{heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else len(text)]


def test_the_contract_example_is_what_rate_writes(tmp_path: Path) -> None:
    example = section((DOCS / "contract.md").read_text(encoding="utf-8"), "## An example")
    (seed, game, command, output) = FENCE.findall(example)
    assert [seed[0], game[0], command[0], output[0]] == ["csv", "json", "sh", "json"]
    assert command[1] == ".venv/bin/rating-worker rate games.jsonl --seed seed.csv\n"
    (tmp_path / "seed.csv").write_text(seed[1], encoding="utf-8")
    (tmp_path / "games.jsonl").write_text(game[1], encoding="utf-8")
    done = rate(tmp_path / "games.jsonl", "--seed", tmp_path / "seed.csv")
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode() == output[1]


def test_every_alert_has_a_runbook_with_its_expression() -> None:
    rules = yaml.safe_load((ROOT / "deploy/k8s/base/prometheusrule.yaml").read_text(encoding="utf-8"))
    every = [rule for group in rules["spec"]["groups"] for rule in group["rules"]]
    alerts = {rule["alert"]: rule for rule in every if "alert" in rule}
    assert {page.stem for page in (DOCS / "runbooks").glob("*.md")} == set(alerts)
    operations = (DOCS / "operations.md").read_text(encoding="utf-8")
    readme = README.read_text(encoding="utf-8")
    for alert, rule in alerts.items():
        runbook = (DOCS / "runbooks" / f"{alert}.md").read_text(encoding="utf-8")
        assert f"```promql\n{rule['expr']}\n```" in runbook
        assert f"| [`{alert}`](runbooks/{alert}.md) |" in operations
        assert rule["annotations"]["runbook_url"].endswith(f"/docs/runbooks/{alert}.md")
        assert {"summary", "description"} <= set(rule["annotations"])
        assert rule["labels"]["severity"] in ("warning", "critical")
    assert "docs/runbooks/" in readme


def test_the_layout_tree_is_the_real_one() -> None:
    architecture = (DOCS / "architecture.md").read_text(encoding="utf-8")
    (tree,) = [body for lang, body in FENCE.findall(architecture) if body.startswith("worker/")]
    named = set()
    for line in tree.splitlines():
        match = re.match(r"^[├└]── (?:([\w/]+)/\s+)?(.*)$", line)
        if match:
            folder = f"worker/{match[1]}/" if match[1] else "worker/"
            named |= {folder + name for name in re.findall(r"[\w]+\.py", match[2])}
    assert named == {str(p.relative_to(ROOT)) for p in (ROOT / "worker").rglob("*.py")}


def test_the_operations_page_has_a_line_for_every_command() -> None:
    parser = build_parser()
    (commands,) = [a.choices for a in parser._actions if isinstance(a.choices, dict)]
    table = section((DOCS / "operations.md").read_text(encoding="utf-8"), "## Commands")
    for name in commands:
        assert re.search(rf"^\| `{re.escape(name)}[ `]", table, re.MULTILINE), name


# --- the README and the pages per system

README_MOST_LINES = 150  # a newcomer reads it in minutes; the rest is one page per topic under docs/


def test_the_readme_stays_short() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MOST_LINES, f"README.md has {len(lines)} lines: move a section to docs/"


def systems_table(readme: str) -> dict[str, str]:
    """The README's table of rating systems: `RATING_SYSTEM` value -> the page its row links."""
    rows = re.findall(r"^\| \[`([\w-]+)`\]\(([^)]+)\)", section(readme, "## Rating systems"), re.MULTILINE)
    return dict(rows)


def test_every_rating_system_has_its_page_and_one_line_in_the_readme() -> None:
    systems = set(tuple(BY_NAME))
    assert systems == {spec.name for spec in BUILT_IN}
    assert {page.stem for page in (DOCS / "systems").glob("*.md")} == systems
    assert systems_table(README.read_text(encoding="utf-8")) == {name: f"docs/systems/{name}.md" for name in systems}
    for name in systems:
        page = (DOCS / "systems" / f"{name}.md").read_text(encoding="utf-8")
        assert page.startswith("# ") and f"(`{name}`)" in page.splitlines()[0], name


def test_the_systems_table_check_sees_a_missing_row() -> None:
    readme = "# R\n\n## Rating systems\n\n| a | b |\n|---|---|\n| [`arena`](docs/systems/arena.md) | x |\n\n## Next\n"
    assert systems_table(readme) == {"arena": "docs/systems/arena.md"}


# --- links and paths


def slug(heading: str) -> str:
    """GitHub's anchor of a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    found: set[str] = set()
    for heading in re.findall(r"^#+ (.*)$", text, re.MULTILINE):
        anchor, n = slug(heading), 1
        while anchor in found:
            anchor, n = f"{slug(heading)}-{n}", n + 1
        found.add(anchor)
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_stay_in_the_repository_and_resolve(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert "../shared" not in text
    for target in re.findall(r"\]\(([^)\s]+)\)", FENCE.sub("", text)):
        assert "://" not in target, f"{target}: a link outside the repository"
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.is_relative_to(ROOT) and linked.exists(), target
        if anchor:
            assert anchor in anchors(linked), target


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_paths_the_pages_name_exist(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    for path in re.findall(r"`((?:worker|schemas|tests|bench|deploy|samples|docs)/[^`\s]*)`", text):
        assert list(ROOT.glob(path)), path


# Where the code's docstrings and comments may not point: the web, a path up out of the
# repository, the specs and notes kept beside it, a machine's own folders. What they cite must
# be in the repository, so that a reader of a clone can follow it. The source specs kept beside
# it are also caught by their bare file names: those of the contracts and of the arena's and
# fide's rules anywhere, and those that a page under docs/systems/ shares unless that folder
# precedes them (a bare name reads as the page but means the spec).
SOURCE_SPECS = (
    r"(?<![\w.-])(?:arena-rules|events|events-v2|fide-period)\.md\b"
    r"|(?<![\w.-])(?<!docs/systems/)(?:uscf-cc|glicko2|tornelo)\.md\b"
)
OUTSIDE = re.compile(
    r"https?://|(?<![\w.])\.\./|\bshared/|\bconventions\.md\b|(?<![\w.])/(?:work|home|tmp/rel)/|" + SOURCE_SPECS
)
CODE = [ROOT / folder for folder in ("worker", "schemas", "tests", "bench")]


def docstrings_and_comments(source: str) -> list[tuple[int, str]]:
    """(line, text) of every comment and docstring of a Python module."""
    found = [
        (token.start[0], token.string)
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            text = first.value.value if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) else None
            if isinstance(text, str):
                found.append((first.lineno, text))
    return found


def outside_references(source: str) -> list[str]:
    return [
        f"line {line}: {match[0]!r}"
        for line, text in docstrings_and_comments(source)
        for match in OUTSIDE.finditer(text)
    ]


def test_docstrings_and_comments_name_nothing_outside_the_repository() -> None:
    modules = sorted(
        path
        for folder in CODE
        for path in folder.rglob("*.py")
        if not any(part.startswith(".") for part in path.relative_to(ROOT).parts)  # a tool's own .venv
    )
    assert len(modules) > 100  # the walk found the code
    found = {
        str(path.relative_to(ROOT)): problems
        for path in modules
        if (problems := outside_references(path.read_text(encoding="utf-8")))
    }
    assert found == {}


def test_the_docstring_check_sees_a_path_out_of_the_repository() -> None:
    source = (
        '"""The rules, as `shared/spec/arena-rules.md` reads them."""\n\n'
        "def f() -> None:\n"
        '    """See https://example.org/rules."""\n'
        "    x = '../kept'  # a string, not a comment: not checked\n"
        "    # from ../shared/seeds/a.csv\n"
    )
    assert outside_references(source) == [
        "line 6: '../'",
        "line 6: 'shared/'",
        "line 1: 'shared/'",
        "line 1: 'arena-rules.md'",
        "line 4: 'https://'",
    ]
    assert outside_references('"""`docs/contract.md`, `worker/systems/arena/rules.py`, redis://host."""\n') == []


def test_the_docstring_check_sees_a_source_spec_named_by_its_bare_file_name() -> None:
    source = (
        '"""Glicko-2, as `glicko2.md` W7 and events-v2.md "Input" read it."""\n\n'
        "def f() -> None:\n"
        '    """arena-rules.md "Numbers"; events.md; fide-period.md section 4."""\n'
        "    # tornelo.md section 11, (uscf-cc.md example 26), systems/glicko2.md\n"
        "    # docs/systems/glicko2.md, docs/systems/tornelo.md, docs/systems/uscf-cc.md: in the repository\n"
    )
    assert outside_references(source) == [
        "line 5: 'tornelo.md'",
        "line 5: 'uscf-cc.md'",
        "line 5: 'glicko2.md'",
        "line 1: 'glicko2.md'",
        "line 1: 'events-v2.md'",
        "line 4: 'arena-rules.md'",
        "line 4: 'events.md'",
        "line 4: 'fide-period.md'",
    ]
    inside = '"""docs/systems/glicko2.md, "Input"; `docs/contract-v2.md`, docs/contract.md, docs/rules.md."""\n'
    assert outside_references(inside) == []


def test_the_configmap_is_read_from_its_env_file_as_kustomize_reads_it(tmp_path: Path) -> None:
    env = tmp_path / "worker.env"
    env.write_text("# a comment\n\nRATING_BATCH_SIZE=1000\nRATING_REDIS_KEY_PREFIX=a=b:\n", encoding="utf-8")
    assert docs.read_configmap(env) == {"RATING_BATCH_SIZE": "1000", "RATING_REDIS_KEY_PREFIX": "a=b:"}
    env.write_text("RATING_BATCH_SIZE\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"worker\.env:1: not a KEY=value line"):
        docs.read_configmap(env)


# --- the changelog

CHANGE_SECTIONS = {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}


def changelog_entries(text: str) -> dict[str, list[str]]:
    """Section heading -> its entries (bullets, continuation lines joined), under Unreleased and releases."""
    entries: dict[str, list[str]] = {}
    section = None
    for line in text.splitlines():
        if line.startswith("### "):
            section = line.removeprefix("### ")
            entries.setdefault(section, [])
        elif line.startswith("## "):
            section = None
        elif section is not None and line.startswith("- "):
            entries[section].append(line[2:])
        elif section is not None and line.startswith("  ") and entries[section]:
            entries[section][-1] += " " + line.strip()
    return entries


def test_the_changelog_keeps_its_format_and_says_what_operators_must_know() -> None:
    text = CHANGELOG.read_text(encoding="utf-8")
    assert text.startswith("# Changelog\n")
    releases = re.findall(r"^## (.+)$", text, re.MULTILINE)
    assert releases[0] == "[Unreleased]"
    assert all(re.fullmatch(r"\[\d+\.\d+\.\d+\] - \d{4}-\d{2}-\d{2}", r) for r in releases[1:]), releases
    entries = changelog_entries(text)
    assert entries and set(entries) <= CHANGE_SECTIONS, set(entries)
    for section, bullets in entries.items():
        for entry in bullets:
            assert "**Operators:**" in entry and "**Side by side:**" in entry, (section, entry[:80])


def test_the_changelog_check_sees_an_entry_without_its_operators_line() -> None:
    text = "# Changelog\n\n## [Unreleased]\n\n### Added\n\n- a thing\n  on two lines. **Side by side:** yes.\n"
    assert changelog_entries(text) == {"Added": ["a thing on two lines. **Side by side:** yes."]}

"""The real Prometheus tools for the tests: promtool and a prometheus server, from Debian's
`prometheus` package (./dev installs it), fed with the project's own rule files and with series
scraped from real workers.

A *recording* is a worker's `/metrics` scraped every second for a few seconds in one situation
(publication denied, Redis away, ...). `input_series` turns it into promtool's input series:
each series starts at its first scraped value and goes on as the scrapes show (`extend`).
Nothing is invented: a situation the worker was not put in has no series.
"""

import json
import re
import shutil
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "k8s" / "base" / "prometheusrule.yaml"

Labels = tuple[tuple[str, str], ...]  # sorted (name, value) pairs, without the metric name
SeriesKey = tuple[str, Labels]


def tool(name: str) -> str:
    """The path of `promtool` or `prometheus`; the test fails (never skips) without it."""
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not installed: ./dev installs Debian's prometheus package, which has it")
    return path


def rule_groups() -> list[dict[str, Any]]:
    """The groups of the deployment's PrometheusRule, as a plain rule file holds them."""
    groups: list[dict[str, Any]] = yaml.safe_load(RULES.read_text())["spec"]["groups"]
    return groups


def write_rule_file(directory: Path) -> Path:
    path = directory / "rating-worker.rules.yml"
    path.write_text(yaml.safe_dump({"groups": rule_groups()}, sort_keys=False))
    return path


def names_read_by_the_rules() -> set[str]:
    text = RULES.read_text()
    return set(re.findall(r"\brating_[a-z_]+", text))


def parse_scrape(text: str) -> dict[SeriesKey, float]:
    """Every sample of a worker's Prometheus text exposition, by (name, labels). Every sample
    carries the deployment's `system` label, one value in a scrape (asserted); the keys leave it
    out: a scrape is of one deployment."""
    samples: dict[SeriesKey, float] = {}
    systems = set()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = dict(sample.labels)
            system = labels.pop("system", None)
            assert system is not None, f"{sample.name}{sample.labels} has no system label"
            systems.add(system)
            samples[(sample.name, tuple(sorted(labels.items())))] = float(sample.value)
    assert len(systems) <= 1, systems
    return samples


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        body: bytes = response.read()
        return body.decode()


@dataclass
class Recording:
    """Scrapes of one worker: (seconds since the first, samples)."""

    scrapes: list[tuple[float, dict[SeriesKey, float]]] = field(default_factory=list)
    start: float | None = None  # the clock at the first scrape

    def add(self, at: float, text: str) -> None:
        if self.start is None:
            self.start = at
        self.scrapes.append((at - self.start, parse_scrape(text)))

    def last(self, name: str, **labels: str) -> float | None:
        return self.scrapes[-1][1].get((name, tuple(sorted(labels.items()))))

    def series(self) -> dict[SeriesKey, list[tuple[float, float]]]:
        wanted = names_read_by_the_rules()
        out: dict[SeriesKey, list[tuple[float, float]]] = {}
        for at, samples in self.scrapes:
            for key, value in samples.items():
                if key[0] in wanted:
                    out.setdefault(key, []).append((at, value))
        return out


COUNTER_SUFFIXES = ("_total", "_count", "_sum", "_bucket")


TREND = 5.0  # how many standard errors a gauge's slope must be from 0 to be taken as a trend


def extend(name: str, points: Sequence[tuple[float, float]], at: float) -> float:
    """The value at `at` (seconds after the recording began) of a series seen at `points`: a
    counter goes on at its mean rate; a 0/1 flag keeps its last value; a gauge with a clear
    trend (a growing lag, an age: its least-squares slope more than TREND standard errors from
    0) goes on along its line; any other gauge (one that comes and goes, such as the lag of a
    healthy worker or the stall between two commits) stays at its mean."""
    (t0, v0), (t1, v1) = points[0], points[-1]
    if len(points) == 1 or t1 == t0:
        return v1
    if name.endswith(COUNTER_SUFFIXES):
        return v0 + max(0.0, (v1 - v0) / (t1 - t0)) * (at - t0)
    values = [v for _, v in points]
    if set(values) <= {0.0, 1.0}:
        return v1
    n = len(points)
    mean_t, mean_v = sum(t for t, _ in points) / n, sum(values) / n
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    slope = sum((t - mean_t) * (v - mean_v) for t, v in points) / spread
    residuals = sum((v - mean_v - slope * (t - mean_t)) ** 2 for t, v in points)
    error = (residuals / max(n - 2, 1) / spread) ** 0.5
    if n > 2 and abs(slope) > TREND * error:
        return max(0.0, mean_v + slope * (at - mean_t))
    return mean_v


def input_series(
    recording: Recording, target: Mapping[str, str], interval: float, steps: int, until: int | None = None
) -> list[dict[str, str]]:
    """promtool's input series of one scraped worker (`target`: the labels Prometheus adds, such
    as namespace, job and pod), one value every `interval` seconds for `steps` intervals; with
    `until`, the worker is gone after that many intervals (no value: `_`)."""
    out = []
    for (name, labels), points in sorted(recording.series().items()):
        merged = {**dict(labels), **target}
        selector = name + "{" + ",".join(f'{k}="{v}"' for k, v in sorted(merged.items())) + "}"
        values = []
        for step in range(steps + 1):
            if until is not None and step > until:
                values.append("_")
            else:
                values.append(_number(extend(name, points, step * interval)))
        out.append({"series": selector, "values": " ".join(values)})
    return out


def _number(value: float) -> str:
    return repr(round(value, 6))


def run_promtool_test(directory: Path, tests: list[dict[str, Any]], interval: str) -> subprocess.CompletedProcess[str]:
    """`promtool test rules` on the deployment's rules with these test cases."""
    rules = write_rule_file(directory)
    spec = {"rule_files": [rules.name], "evaluation_interval": interval, "tests": tests}
    path = directory / "alerts.test.yml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False, width=1 << 30))
    return subprocess.run(
        [tool("promtool"), "test", "rules", path.name],
        check=False,
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=300,
    )


@dataclass
class PrometheusServer:
    """A real prometheus server scraping `targets` every second with the deployment's rules."""

    directory: Path
    port: int
    process: subprocess.Popen[bytes] | None = None

    def config(self, jobs: Mapping[str, Sequence[int]], labels: Mapping[str, str]) -> Path:
        rules = write_rule_file(self.directory)
        scrape_configs = [
            {
                "job_name": job,
                "scrape_interval": "1s",
                "scrape_timeout": "900ms",
                "static_configs": [{"targets": [f"127.0.0.1:{p}" for p in ports], "labels": dict(labels)}],
                # The pod label a PodMonitor adds, here the target's address.
                "relabel_configs": [{"source_labels": ["__address__"], "target_label": "pod"}],
            }
            for job, ports in jobs.items()
        ]
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(rules)],
            "scrape_configs": scrape_configs,
        }
        path = self.directory / "prometheus.yml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        return path

    def api(self, path: str, **params: str) -> Any:
        query = urllib.parse.urlencode(params)
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api/v1/{path}?{query}", timeout=5) as response:
            body = json.loads(response.read())
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self.api("query", query=expr)["result"]
        return result

    def alerts(self) -> list[dict[str, Any]]:
        alerts: list[dict[str, Any]] = self.api("alerts")["alerts"]
        return alerts

"""deploy/: the Kubernetes manifests, the alerts, the dashboard and the Dockerfile, checked statically.

There is no Docker engine and no cluster here: manifests are rendered (tests/deploy/kustomize.py),
validated against the Kubernetes schemas (kubernetes-validate), CRDs get a structural check,
and every PromQL expression must parse and name only metrics the worker exports.
"""

import json
import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import promql_parser
import pytest
import yaml
from prometheus_client import REGISTRY

import worker.metrics  # noqa: F401  # registers the worker's metrics
from tests.deploy.kustomize import build
from worker.settings import WorkerSettings

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
K8S_VERSION = "1.30"
INPUT_PARTITIONS = 12  # `rating-worker topics` default
# Settings left unset on purpose in a Deployment: static membership needs stable pod names
# (a StatefulSet), the sentinel settings apply only behind Redis Sentinel, and the TLS file
# settings are paths of certificates mounted where a cluster uses TLS.
UNSET_BY_DESIGN = {
    "kafka_group_instance_id",
    "redis_sentinels",
    "redis_sentinel_service",
    "kafka_ssl_cafile",
    "kafka_ssl_certfile",
    "kafka_ssl_keyfile",
    "redis_ssl_ca_file",
    "redis_ssl_certfile",
    "redis_ssl_keyfile",
}


@pytest.fixture(scope="module", params=["base", "overlays/production"])
def rendered(request: pytest.FixtureRequest) -> list[dict[str, Any]]:
    return build(DEPLOY / "k8s" / request.param)


def by_kind(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (obj,) = [o for o in objects if o["kind"] == kind]
    return obj


def test_core_resources_validate_against_the_kubernetes_schemas(rendered: list[dict[str, Any]]) -> None:
    core = [o for o in rendered if "." not in o["apiVersion"].split("/")[0] or o["apiVersion"].startswith("apps/")]
    core += [o for o in rendered if o["apiVersion"].startswith("policy/")]
    assert {o["kind"] for o in core} >= {"Deployment", "ConfigMap", "ServiceAccount", "PodDisruptionBudget"}
    for obj in core:
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def test_the_deployment_is_wired_to_the_health_endpoints_and_drains_in_time(rendered: list[dict[str, Any]]) -> None:
    deployment = by_kind(rendered, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/livez"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    config = by_kind(rendered, "ConfigMap")["data"]
    assert pod["terminationGracePeriodSeconds"] > float(config["RATING_SHUTDOWN_GRACE_SECONDS"])
    assert container["ports"][0]["containerPort"] == int(config["RATING_METRICS_PORT"])
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert "RATING_KAFKA_GROUP_INSTANCE_ID" not in config  # pod names of a Deployment are not stable
    assert deployment["spec"]["selector"]["matchLabels"].items() <= pod.get("labels", {}).items() or (
        deployment["spec"]["selector"]["matchLabels"].items()
        <= deployment["spec"]["template"]["metadata"]["labels"].items()
    )


def test_every_setting_comes_from_the_configmap_or_a_secret(rendered: list[dict[str, Any]]) -> None:
    config = by_kind(rendered, "ConfigMap")["data"]
    (container,) = by_kind(rendered, "Deployment")["spec"]["template"]["spec"]["containers"]
    from_secrets = {e["name"] for e in container.get("env", []) if "secretKeyRef" in e.get("valueFrom", {})}
    settings = {f"RATING_{name.upper()}" for name in WorkerSettings.model_fields if name not in UNSET_BY_DESIGN}
    assert settings - set(config) - from_secrets == set()
    assert set(config) <= settings, "the ConfigMap names a setting the worker does not read"
    assert "RATING_REDIS_URL" in from_secrets and "RATING_REDIS_URL" not in config  # it may carry a password


def test_crds_have_the_fields_their_operators_need(rendered: list[dict[str, Any]]) -> None:
    deployment = by_kind(rendered, "Deployment")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    scaled = by_kind(rendered, "ScaledObject")
    assert scaled["apiVersion"] == "keda.sh/v1alpha1"
    assert scaled["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"]
    assert 1 <= scaled["spec"]["minReplicaCount"] <= scaled["spec"]["maxReplicaCount"] <= INPUT_PARTITIONS
    behavior = scaled["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    assert behavior["scaleDown"]["stabilizationWindowSeconds"] >= 60
    (trigger,) = scaled["spec"]["triggers"]
    assert trigger["type"] == "kafka" and trigger["metadata"]["topic"] == "arena.game.finished.v1"
    monitor = by_kind(rendered, "PodMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= labels.items()
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    assert endpoint["port"] == deployment["spec"]["template"]["spec"]["containers"][0]["ports"][0]["name"]
    pdb = by_kind(rendered, "PodDisruptionBudget")
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    rules = by_kind(rendered, "PrometheusRule")
    for group in rules["spec"]["groups"]:
        for rule in group["rules"]:
            assert {"alert", "expr", "for", "labels", "annotations"} <= set(rule)
            assert rule["labels"]["severity"] in ("warning", "critical")


def exported_metric_names() -> set[str]:
    """Every series name the registry knows, histogram and counter suffixes included."""
    return {name for names in REGISTRY._collector_to_names.values() for name in names}


def expressions() -> list[str]:
    rules = yaml.safe_load((DEPLOY / "k8s/base/prometheusrule.yaml").read_text())
    exprs = [r["expr"] for g in rules["spec"]["groups"] for r in g["rules"]]
    dashboard = json.loads((DEPLOY / "grafana/rating-worker-dashboard.json").read_text())
    exprs += [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    return exprs


def test_every_promql_expression_parses_and_names_exported_metrics() -> None:
    exported = exported_metric_names()
    exprs = expressions()
    assert len(exprs) >= 12
    histograms = {"_bucket", "_count", "_sum"}
    for expr in exprs:
        promql_parser.parse(expr)
        for name in set(re.findall(r"\brating_[a-z_]+", expr)):
            assert name in exported or any(name.removesuffix(s) + s in exported for s in histograms), (name, expr)
    used = {n for e in exprs for n in re.findall(r"\brating_[a-z_]+", e)}
    for must in ("rating_consumer_lag_records", "rating_dead_letters_total", "rating_end_to_end_seconds_bucket"):
        assert must in used


def test_the_dockerfile_builds_this_repo_into_a_small_non_root_image() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]
    assert sum(line.startswith("FROM ") for line in lines) >= 2, "multi-stage"
    users = [line.split()[1] for line in lines if line.startswith("USER ")]
    assert users and users[-1].split(":")[0] not in ("root", "0")
    (entrypoint,) = [line for line in lines if line.startswith("ENTRYPOINT")]
    assert json.loads(entrypoint.removeprefix("ENTRYPOINT")) == ["rating-worker", "run"]  # exec form: gets SIGTERM
    assert any(line.startswith("COPY worker") for line in lines)
    assert any("pip wheel" in line and line.rstrip().endswith(".") for line in lines), "installs the repo itself"
    for line in lines:
        if line.startswith(("ENV", "ARG")):
            assert not re.search(r"PASSWORD|SECRET|TOKEN|REDIS_URL", line, re.IGNORECASE), line

"""deploy/: the Kubernetes manifests, the alerts, the dashboard and the Dockerfile, checked statically.

There is no Docker engine and no cluster here. Every overlay is rendered by the real kustomize,
`kubectl kustomize` (tests/deploy/render.py finds a kubectl >= 1.27, and the tests fail, never
skip, without one); components are rendered through the overlays that use them. The base is no
deployment of its own: it names no rating system (each system's component does), and is checked
for that. An overlay of a system other than the arena's is deployed beside the arena's, in its
namespace (`BESIDE`): its objects have a suffix of their own, and it leaves the namespace, the
alerts and the dashboard to the arena's overlay. The core
resources are validated against the Kubernetes schemas (kubernetes-validate), the CRDs get a
structural check, the ScaledObject must read the lag of the worker's own brokers, group and topic
(as the rendered ConfigMap gives them) with the worker's credentials, and every PromQL expression
(alerts and dashboard) must parse and name only metrics the worker exports. The overlay of a
per-period system whose periods end by the clock (fide's, and only it) runs `close-period --due`
hourly, as the command Jobs run; that of one whose periods end by a record (tornelo's, and only
it) runs one close follower, `close-period --follow`, as the workers run, scraped as they are.
"""

import json
import os
import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import promql_parser
import pytest
import yaml
from prometheus_client import REGISTRY

import worker.metrics  # registers the worker's metrics
from tests.deploy.render import render
from worker.settings import WorkerSettings
from worker.systems.registry import BUILT_IN, BY_NAME

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
K8S = DEPLOY / "k8s"
DASHBOARD = K8S / "base/grafana/rating-worker-dashboard.json"
K8S_VERSION = "1.30"
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
# RATING_KAFKA_SASL_MECHANISM -> the KEDA kafka scaler's `sasl`.
KEDA_SASL = {"PLAIN": "plaintext", "SCRAM-SHA-256": "scram_sha256", "SCRAM-SHA-512": "scram_sha512"}
# The kustomizations a cluster is given: every overlay (found, so a new one is tested).
TARGETS = sorted(str(p.parent.relative_to(K8S)) for p in K8S.glob("overlays/*/kustomization.yaml"))
# The overlays deployed beside another, which ships the namespace, the alerts and the dashboard.
BESIDE = {
    "overlays/production-uscf-cc": "overlays/production",
    "overlays/production-glicko2": "overlays/production",
    "overlays/production-fide": "overlays/production",
    "overlays/production-tornelo": "overlays/production",
}
# The settings each system's component sets, and the base leaves to them.
SYSTEM_SETTINGS = (
    "RATING_SYSTEM",
    "RATING_TOPIC_GAMES",
    "RATING_TOPIC_RATINGS",
    "RATING_TOPIC_DEAD_LETTERS",
    "RATING_KAFKA_GROUP_ID",
    "RATING_REDIS_KEY_PREFIX",
)
# A system's own parameters: set by that system's component only (tornelo's, at their defaults).
OWN_PARAMETERS = {"tornelo": ("RATING_TORNELO_K", "RATING_TORNELO_BONUS_FACTOR")}
# The close follower (`close-period --follow`) of a system whose periods end by a record (tornelo):
# its Deployment, NetworkPolicy and PodMonitor, by their names without the overlay's suffix.
FOLLOWER = "rating-worker-close-follower"
FOLLOWER_COMMAND = ["rating-worker", "close-period", "--follow"]


@pytest.fixture(scope="module", params=TARGETS)
def rendered(request: pytest.FixtureRequest) -> list[dict[str, Any]]:
    return render(K8S / request.param)


def by_kind(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    (obj,) = [o for o in objects if o["kind"] == kind and name in (None, o["metadata"]["name"])]
    return obj


def workers(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    """The workers' object of `kind` (their Deployment, NetworkPolicy, PodMonitor), not the close
    follower's of an overlay that has one (`FOLLOWER`)."""
    (obj,) = [o for o in objects if o["kind"] == kind and not o["metadata"]["name"].startswith(FOLLOWER)]
    return obj


def worker_config_name(objects: list[dict[str, Any]]) -> str:
    """The name of the ConfigMap the worker reads its settings from (its envFrom)."""
    (source,) = worker_container(objects)["envFrom"]
    name: str = source["configMapRef"]["name"]
    return name


def suffix(objects: list[dict[str, Any]]) -> str:
    """What the overlay adds to every object's name: "" for the arena's, `-uscf-cc` for uscf-cc's."""
    name: str = workers(objects, "Deployment")["metadata"]["name"]
    return name.removeprefix("rating-worker")


def ships_shared(objects: list[dict[str, Any]]) -> bool:
    """Whether the overlay ships the namespace, the alerts and the dashboard (not one deployed beside)."""
    return suffix(objects) == ""


def worker_config(objects: list[dict[str, Any]]) -> dict[str, str]:
    data: dict[str, str] = by_kind(objects, "ConfigMap", worker_config_name(objects))["data"]
    return data


def worker_container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    containers: list[dict[str, Any]] = workers(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    (container,) = containers
    return container


def test_core_resources_validate_against_the_kubernetes_schemas(rendered: list[dict[str, Any]]) -> None:
    core = [o for o in rendered if "." not in o["apiVersion"].split("/")[0] or o["apiVersion"].startswith("apps/")]
    core += [o for o in rendered if o["apiVersion"].startswith("policy/")]
    assert {o["kind"] for o in core} >= {"Deployment", "ConfigMap", "ServiceAccount", "PodDisruptionBudget"}
    core += [o for o in rendered if o["apiVersion"].startswith("networking.k8s.io/")]
    for obj in core:
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def test_the_deployment_is_wired_to_the_health_endpoints_and_drains_in_time(rendered: list[dict[str, Any]]) -> None:
    deployment = workers(rendered, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    container = worker_container(rendered)
    assert container["livenessProbe"]["httpGet"]["path"] == "/livez"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    config = worker_config(rendered)
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
    config = worker_config(rendered)
    container = worker_container(rendered)
    from_secrets = {e["name"] for e in container.get("env", []) if "secretKeyRef" in e.get("valueFrom", {})}
    settings = {f"RATING_{name.upper()}" for name in WorkerSettings.model_fields if name not in UNSET_BY_DESIGN}
    others = {name for system, names in OWN_PARAMETERS.items() if system != config["RATING_SYSTEM"] for name in names}
    assert settings - set(config) - from_secrets == others
    assert set(config) <= settings, "the ConfigMap names a setting the worker does not read"
    assert "RATING_REDIS_URL" in from_secrets and "RATING_REDIS_URL" not in config  # it may carry a password
    # The generated name: the deployment's and a hash of the data, so a change rolls the pods.
    assert re.fullmatch(rf"rating-worker{suffix(rendered)}-[a-z0-9]{{10}}", worker_config_name(rendered))


def test_the_base_names_no_rating_system() -> None:
    """So that no overlay runs with another system's names by inheriting the arena's."""
    config = worker_config(render(K8S / "base"))
    assert [name for name in SYSTEM_SETTINGS if name in config] == []
    assert [name for names in OWN_PARAMETERS.values() for name in names if name in config] == []


def test_a_change_of_setting_renames_the_configmap_so_the_pods_roll(tmp_path: Path) -> None:
    base = render(K8S / "base")
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        f"resources:\n  - {os.path.relpath(K8S / 'base', overlay)}\n"  # kustomize refuses absolute paths
        "configMapGenerator:\n  - name: rating-worker\n    behavior: merge\n    literals:\n"
        "      - RATING_BATCH_SIZE=500\n"
    )
    changed = render(overlay)
    assert worker_config(changed)["RATING_BATCH_SIZE"] == "500"
    assert worker_config_name(changed) != worker_config_name(base)
    assert worker_config_name(changed).startswith("rating-worker-")


def test_keda_alone_sets_the_number_of_replicas(rendered: list[dict[str, Any]]) -> None:
    deployment = workers(rendered, "Deployment")
    assert by_kind(rendered, "ScaledObject")["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"]
    assert "replicas" not in deployment["spec"]  # every apply would reset it and force a rebalance


def test_the_pods_spread_over_zones_and_nodes(rendered: list[dict[str, Any]]) -> None:
    template = workers(rendered, "Deployment")["spec"]["template"]
    spread = template["spec"]["topologySpreadConstraints"]
    assert {c["topologyKey"] for c in spread} == {"topology.kubernetes.io/zone", "kubernetes.io/hostname"}
    for constraint in spread:
        assert constraint["labelSelector"]["matchLabels"].items() <= template["metadata"]["labels"].items()


def test_the_network_policy_lets_through_what_the_worker_uses_only(rendered: list[dict[str, Any]]) -> None:
    policy = workers(rendered, "NetworkPolicy")
    template = workers(rendered, "Deployment")["spec"]["template"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= template["metadata"]["labels"].items()
    assert set(policy["spec"]["policyTypes"]) == {"Ingress", "Egress"}
    (ingress,) = policy["spec"]["ingress"]
    assert "from" not in ingress or ingress["from"]  # never an empty `from` by accident
    metrics = worker_container(rendered)["ports"][0]
    assert [(p["port"], p["protocol"]) for p in ingress["ports"]] == [(metrics["name"], "TCP")]
    egress = {(p["port"], p["protocol"]) for rule in policy["spec"]["egress"] for p in rule["ports"]}
    assert {(53, "UDP"), (53, "TCP"), (6379, "TCP")} <= egress
    kafka = {int(b.rsplit(":", 1)[1]) for b in worker_config(rendered)["RATING_KAFKA_BOOTSTRAP_SERVERS"].split(",")}
    assert {(port, "TCP") for port in kafka} <= egress


def test_an_overlay_with_a_namespace_creates_it_under_pod_security_restricted(rendered: list[dict[str, Any]]) -> None:
    deployment = workers(rendered, "Deployment")
    namespace = deployment["metadata"].get("namespace")
    assert namespace is not None
    if not ships_shared(rendered):  # deployed beside the arena's overlay, in its namespace
        assert not [o for o in rendered if o["kind"] == "Namespace"]
        (beside,) = {BESIDE[t] for t in BESIDE if suffix(render(K8S / t)) == suffix(rendered)}
        rendered = render(K8S / beside)
        assert workers(rendered, "Deployment")["metadata"]["namespace"] == namespace
    labels = by_kind(rendered, "Namespace", namespace)["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    # What "restricted" asks of every container, the init container included.
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    for container in pod["containers"] + pod["initContainers"]:
        assert container["securityContext"]["allowPrivilegeEscalation"] is False
        assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]


def test_crds_have_the_fields_their_operators_need(rendered: list[dict[str, Any]]) -> None:
    deployment = workers(rendered, "Deployment")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    scaled = by_kind(rendered, "ScaledObject")
    assert scaled["apiVersion"] == "keda.sh/v1alpha1"
    assert scaled["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"]
    assert 1 <= scaled["spec"]["minReplicaCount"] <= scaled["spec"]["maxReplicaCount"]
    behavior = scaled["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    assert behavior["scaleDown"]["stabilizationWindowSeconds"] >= 60
    monitor = workers(rendered, "PodMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= labels.items()
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    assert endpoint["port"] == worker_container(rendered)["ports"][0]["name"]
    pdb = by_kind(rendered, "PodDisruptionBudget")
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    if not ships_shared(rendered):
        assert [o for o in rendered if o["kind"] == "PrometheusRule"] == []  # the arena's overlay ships them
        return
    rules = by_kind(rendered, "PrometheusRule")
    for group in rules["spec"]["groups"]:
        for rule in group["rules"]:
            if "record" in rule:
                assert set(rule) <= {"record", "expr", "labels"} and ":" in rule["record"], rule
                continue
            assert {"alert", "expr", "for", "labels", "annotations"} <= set(rule)
            assert rule["labels"]["severity"] in ("warning", "critical")


def test_the_preflight_runs_check_as_the_worker_would_run(rendered: list[dict[str, Any]]) -> None:
    pod = workers(rendered, "Deployment")["spec"]["template"]["spec"]
    (preflight,) = pod["initContainers"]
    worker = worker_container(rendered)
    assert preflight["command"] == ["rating-worker", "check"]
    for field in ("image", "envFrom", "env", "securityContext", "volumeMounts"):
        assert preflight[field] == worker[field], field


# --- the command Jobs, the label Prometheus selects by, the components for clusters without KEDA or the operator

COMMAND_JOBS = {
    "rating-worker-topics": ["rating-worker", "topics"],
    "rating-worker-import": ["rating-worker", "import", "/seed/seed.csv"],
    "rating-worker-restore": ["rating-worker", "restore"],
    "rating-worker-rebuild": ["rating-worker", "rebuild", "--seed", "/seed/seed.csv", "--memory-mb", "256"],
    "rating-worker-switch-over": ["rating-worker", "switch-over"],
}


def test_the_base_has_no_command_job() -> None:
    """A component of the overlays: the base's labels would make them workers."""
    assert [o for o in render(K8S / "base") if o["kind"] == "CronJob"] == []


# The one scheduled job, in the overlay of a per-period system only: it closes what is due.
CLOSE_PERIOD = ("rating-worker-close-period", ["rating-worker", "close-period", "--due"])


def command_jobs(rendered: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The overlay's CronJobs by their names without the overlay's suffix."""
    return {o["metadata"]["name"].removesuffix(suffix(rendered)): o for o in rendered if o["kind"] == "CronJob"}


def check_runs_as_the_worker(
    rendered: list[dict[str, Any]], name: str, job: dict[str, Any], command: list[str]
) -> None:
    """`job` runs `command` with the worker's image, settings, secrets and restrictions, in its
    namespace, in pods that do not pass for workers."""
    worker = worker_container(rendered)
    deployment = workers(rendered, "Deployment")
    assert job["metadata"].get("namespace") == deployment["metadata"].get("namespace"), name
    pod = job["spec"]["jobTemplate"]["spec"]["template"]
    assert not deployment["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items(), (
        f"{name}'s pods pass for workers"
    )
    assert pod["spec"]["serviceAccountName"] == by_kind(rendered, "ServiceAccount")["metadata"]["name"]
    (container,) = pod["spec"]["containers"]
    assert container["command"] == command
    for field in ("image", "envFrom", "env", "securityContext"):
        assert container[field] == worker[field], (name, field)
    assert pod["spec"]["restartPolicy"] == "Never"
    assert pod["spec"]["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert mounts["tmp"] == "/tmp" and "emptyDir" in volumes["tmp"]
    if "/seed/seed.csv" in container["command"]:
        seeds = volumes["seed"]["configMap"]["name"]
        assert mounts["seed"] == "/seed" and seeds == f"rating-worker-seed{suffix(rendered)}"  # the system's rows
    kubernetes_validate.validate(job, K8S_VERSION, strict=True)


def test_every_command_job_is_a_suspended_template_run_as_the_worker_runs(rendered: list[dict[str, Any]]) -> None:
    jobs = command_jobs(rendered)
    jobs.pop(CLOSE_PERIOD[0], None)  # scheduled: the test below
    assert set(jobs) == set(COMMAND_JOBS)
    for name, job in jobs.items():
        assert job["spec"]["suspend"] is True
        check_runs_as_the_worker(rendered, name, job, COMMAND_JOBS[name])


def test_a_per_period_systems_overlay_closes_what_is_due_hourly(rendered: list[dict[str, Any]]) -> None:
    """fide's overlay runs `close-period --due` every hour, one run at a time, with fide's
    settings, each run (and its one retry) outlasting the drain it may wait; no other has it (a
    system whose periods end by a record, tornelo, has a close follower instead: below)."""
    config = worker_config(rendered)
    job = command_jobs(rendered).get(CLOSE_PERIOD[0])
    spec = BY_NAME[config["RATING_SYSTEM"]]
    if not spec.periodic or spec.ends_by_record:
        assert job is None
        return
    assert job is not None, f"{config['RATING_SYSTEM']}'s overlay has no {CLOSE_PERIOD[0]}"
    assert job["metadata"]["name"] == f"{CLOSE_PERIOD[0]}-{config['RATING_SYSTEM']}"  # the overlay's suffix
    check_runs_as_the_worker(rendered, CLOSE_PERIOD[0], job, CLOSE_PERIOD[1])
    schedule = job["spec"]
    assert schedule.get("suspend", False) is False
    assert re.fullmatch(r"[1-5]?[0-9] \* \* \* \*", schedule["schedule"]), schedule["schedule"]  # once an hour
    assert schedule["timeZone"] == "Etc/UTC"  # the months' ends are UTC's
    assert schedule["concurrencyPolicy"] == "Forbid"
    assert 0 < schedule["startingDeadlineSeconds"] < 3600  # a run missed by more is the next hour's
    run = schedule["jobTemplate"]["spec"]
    drain = float(config["RATING_CLOSE_DRAIN_TIMEOUT_SECONDS"])
    assert (run["backoffLimit"] + 1) * drain < run["activeDeadlineSeconds"] < 3600, run
    # Its settings are the deployment's own (fide's names, the worker's ConfigMap).
    (source,) = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["envFrom"]
    assert source["configMapRef"]["name"] == worker_config_name(rendered)


def test_only_the_fide_overlay_closes_periods() -> None:
    closing = [t for t in TARGETS if CLOSE_PERIOD[0] in command_jobs(render(K8S / t))]
    assert closing == ["overlays/production-fide"]
    assert worker_config(render(K8S / closing[0]))["RATING_SYSTEM"] == "fide"


def follower_objects(rendered: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The close follower's objects by kind (one of each at most)."""
    found = [o for o in rendered if o["metadata"]["name"].startswith(FOLLOWER)]
    assert len({o["kind"] for o in found}) == len(found), [o["metadata"]["name"] for o in found]
    return {o["kind"]: o for o in found}


def test_a_system_whose_periods_end_by_a_record_runs_one_close_follower(rendered: list[dict[str, Any]]) -> None:
    """tornelo's overlay runs `close-period --follow` as a Deployment of one replica replaced by
    Recreate (a rollout never runs two at once), as the workers run (their image, settings,
    secrets, restrictions, metrics port and probes), in pods of its own that no selector of the
    workers' takes for theirs, with a NetworkPolicy and a PodMonitor of its own; no other overlay
    has one."""
    config = worker_config(rendered)
    spec = BY_NAME[config["RATING_SYSTEM"]]
    mine = follower_objects(rendered)
    if not spec.ends_by_record:
        assert mine == {}
        return
    assert set(mine) == {"Deployment", "NetworkPolicy", "PodMonitor"}
    for obj in mine.values():
        assert obj["metadata"]["name"] == f"{FOLLOWER}{suffix(rendered)}"  # the overlay's suffix
    deployment, theirs = mine["Deployment"], workers(rendered, "Deployment")
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    pod, worker_pod = deployment["spec"]["template"], theirs["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    assert container["command"] == FOLLOWER_COMMAND and "args" not in container
    worker = worker_container(rendered)
    for field in (
        "image",
        "imagePullPolicy",
        "envFrom",
        "env",
        "securityContext",
        "volumeMounts",
        "ports",
        "readinessProbe",
        "livenessProbe",
    ):
        assert container[field] == worker[field], field
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/livez"
    assert container["ports"][0]["containerPort"] == int(config["RATING_METRICS_PORT"])
    for field in ("serviceAccountName", "automountServiceAccountToken", "securityContext", "volumes"):
        assert pod["spec"][field] == worker_pod["spec"][field], field
    resources = container["resources"]
    assert {"cpu", "memory"} <= set(resources["requests"]) and "memory" in resources["limits"]
    # Its pods are its own: its selectors take them and no worker's; the workers' (and the arena's
    # beside it) never take its.
    labels = pod["metadata"]["labels"]
    own = [
        deployment["spec"]["selector"]["matchLabels"],
        mine["NetworkPolicy"]["spec"]["podSelector"]["matchLabels"],
        mine["PodMonitor"]["spec"]["selector"]["matchLabels"],
    ]
    (beside,) = {BESIDE[t] for t in BESIDE if suffix(render(K8S / t)) == suffix(rendered)}
    for selector in own:
        assert selector.items() <= labels.items()
        assert not selected(selector, rendered) and not selected(selector, render(K8S / beside))
    for selector in selectors_of(rendered) + selectors_of(render(K8S / beside)):
        assert not selector.items() <= labels.items(), selector
    # Let through what the workers' policy lets through; scraped as they are, with the label
    # Prometheus selects by.
    policy = {k: v for k, v in mine["NetworkPolicy"]["spec"].items() if k != "podSelector"}
    assert policy == {k: v for k, v in workers(rendered, "NetworkPolicy")["spec"].items() if k != "podSelector"}
    monitor, worker_monitor = mine["PodMonitor"], workers(rendered, "PodMonitor")
    assert monitor["spec"]["podMetricsEndpoints"] == worker_monitor["spec"]["podMetricsEndpoints"]
    assert monitor["spec"]["podMetricsEndpoints"][0]["port"] == container["ports"][0]["name"]
    assert monitor["metadata"]["labels"]["release"] == worker_monitor["metadata"]["labels"]["release"]
    namespaces = {o["metadata"]["namespace"] for o in mine.values()}
    assert namespaces == {theirs["metadata"]["namespace"]}
    # What it reads: the platform's tournament topic, with the group the system reserves for it.
    assert config["RATING_TOPIC_TOURNAMENTS"] == WorkerSettings.model_fields["topic_tournaments"].default
    (group,) = [r.value for r in spec.reserved if r.field == "kafka_group_id"]
    assert group == f"{config['RATING_KAFKA_GROUP_ID']}-close"


def test_only_the_tornelo_overlay_runs_a_close_follower() -> None:
    following = [t for t in TARGETS if "Deployment" in follower_objects(render(K8S / t))]
    assert following == ["overlays/production-tornelo"]
    assert worker_config(render(K8S / following[0]))["RATING_SYSTEM"] == "tornelo"


def test_tornelos_overlay_sets_its_parameters_at_their_defaults() -> None:
    """Recorded on its live prefix by the first command that writes there: set explicitly, not
    left to the worker's defaults, so that every command of the deployment runs with the same."""
    config = worker_config(render(K8S / "overlays/production-tornelo"))
    for name in OWN_PARAMETERS["tornelo"]:
        assert config[name] == WorkerSettings.model_fields[name.removeprefix("RATING_").lower()].default, name


def test_the_monitoring_objects_carry_the_label_prometheus_selects(rendered: list[dict[str, Any]]) -> None:
    monitoring = [o for o in rendered if o["apiVersion"].startswith("monitoring.coreos.com/")]
    shipped = {"PodMonitor", "PrometheusRule"} if ships_shared(rendered) else {"PodMonitor"}
    assert {o["kind"] for o in monitoring} == shipped
    releases = {o["metadata"].get("labels", {}).get("release") for o in monitoring}
    assert releases == {"kube-prometheus-stack"}


@pytest.mark.parametrize("overlay", [t for t in TARGETS if t != "base"])
def test_the_components_for_a_cluster_without_keda_or_the_operator(overlay: str, tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    relative = os.path.relpath(K8S, mine)  # kustomize refuses absolute paths
    (mine / "kustomization.yaml").write_text(
        f"resources:\n  - {relative}/{overlay}\n"
        f"components:\n  - {relative}/components/without-keda\n  - {relative}/components/without-prometheus-operator\n"
    )
    objects = render(mine)
    assert [o["kind"] for o in objects if "keda.sh" in o["apiVersion"] or "coreos.com" in o["apiVersion"]] == []
    deployment = workers(objects, "Deployment")
    assert 1 <= deployment["spec"]["replicas"] <= int(worker_config(objects)["RATING_PARTITIONS"])


# --- the ScaledObject: the worker's own Kafka settings


def test_the_scaledobject_reads_the_lag_of_the_workers_own_brokers_group_and_topic(
    rendered: list[dict[str, Any]],
) -> None:
    config = worker_config(rendered)
    scaled = by_kind(rendered, "ScaledObject")
    triggers = scaled["spec"]["triggers"]
    assert triggers and all(t["type"] == "kafka" for t in triggers)
    for trigger in triggers:
        metadata = trigger["metadata"]
        brokers = [b.strip() for b in metadata["bootstrapServers"].split(",")]
        assert brokers == [b.strip() for b in config["RATING_KAFKA_BOOTSTRAP_SERVERS"].split(",")]
        assert metadata["consumerGroup"] == config["RATING_KAFKA_GROUP_ID"]
        assert metadata["topic"] == config["RATING_TOPIC_GAMES"]
        # The worker starts a partition without a committed offset from its earliest record.
        assert metadata["offsetResetPolicy"] == "earliest"
        # KEDA accepts a fallback only with the AverageValue metric type (the kafka trigger's default).
        assert trigger.get("metricType", "AverageValue") == "AverageValue"
    # No more replicas than partitions: the number itself, not a string KEDA would refuse.
    assert scaled["spec"]["maxReplicaCount"] == int(config["RATING_PARTITIONS"])
    fallback = scaled["spec"]["fallback"]
    assert fallback["failureThreshold"] >= 1
    assert scaled["spec"]["minReplicaCount"] <= fallback["replicas"] <= scaled["spec"]["maxReplicaCount"]


def test_the_scaledobject_talks_to_kafka_as_the_worker_does(rendered: list[dict[str, Any]]) -> None:
    config = worker_config(rendered)
    scaled = by_kind(rendered, "ScaledObject")
    (trigger,) = scaled["spec"]["triggers"]
    metadata = trigger["metadata"]
    protocol = config["RATING_KAFKA_SECURITY_PROTOCOL"]
    assert metadata.get("tls", "disable") == ("enable" if protocol.endswith("SSL") else "disable")
    if not protocol.startswith("SASL_"):
        assert "sasl" not in metadata and "authenticationRef" not in trigger
        return
    assert metadata["sasl"] == KEDA_SASL[config["RATING_KAFKA_SASL_MECHANISM"]]
    auth = by_kind(rendered, "TriggerAuthentication", trigger["authenticationRef"]["name"])
    assert auth["apiVersion"] == "keda.sh/v1alpha1"
    assert trigger["authenticationRef"].get("kind", "TriggerAuthentication") == "TriggerAuthentication"
    assert auth["metadata"].get("namespace") == scaled["metadata"].get("namespace")
    # sasl and tls are in the trigger: KEDA refuses them in both places.
    refs = {ref["parameter"]: (ref["name"], ref["key"]) for ref in auth["spec"]["secretTargetRef"]}
    assert set(refs) == {"username", "password"}
    env = {
        e["name"]: (e["valueFrom"]["secretKeyRef"]["name"], e["valueFrom"]["secretKeyRef"]["key"])
        for e in worker_container(rendered)["env"]
        if "secretKeyRef" in e.get("valueFrom", {})
    }
    assert refs["username"] == env["RATING_KAFKA_SASL_USERNAME"]
    assert refs["password"] == env["RATING_KAFKA_SASL_PASSWORD"]


def test_every_component_is_rendered_through_an_overlay() -> None:
    used: set[Path] = set()
    for overlay in TARGETS:
        kustomization = yaml.safe_load((K8S / overlay / "kustomization.yaml").read_text())
        used |= {(K8S / overlay / c).resolve() for c in kustomization.get("components", [])}
    # These two go over an overlay (test_the_components_for_a_cluster_without_keda_or_the_operator).
    used |= {(K8S / "components" / name).resolve() for name in ("without-keda", "without-prometheus-operator")}
    assert {p.parent.resolve() for p in K8S.glob("components/*/kustomization.yaml")} <= used
    assert any("TriggerAuthentication" in {o["kind"] for o in render(K8S / overlay)} for overlay in TARGETS), (
        "no overlay renders the kafka-sasl-tls component"
    )


# --- several systems side by side in one namespace


def selected(selector: dict[str, str], objects: list[dict[str, Any]]) -> bool:
    """Whether a selector (matchLabels) selects the pods of the worker's Deployment in `objects`."""
    labels: dict[str, str] = workers(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]
    return selector.items() <= labels.items()


def selectors_of(objects: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Every selector of the worker's pods: the Deployment's, its spread constraints', the PDB's,
    the NetworkPolicy's, the PodMonitor's."""
    pod = workers(objects, "Deployment")["spec"]
    found = [pod["selector"]["matchLabels"]]
    found += [c["labelSelector"]["matchLabels"] for c in pod["template"]["spec"]["topologySpreadConstraints"]]
    found.append(by_kind(objects, "PodDisruptionBudget")["spec"]["selector"]["matchLabels"])
    found.append(workers(objects, "NetworkPolicy")["spec"]["podSelector"]["matchLabels"])
    found.append(workers(objects, "PodMonitor")["spec"]["selector"]["matchLabels"])
    return found


@pytest.mark.parametrize(("overlay", "beside"), sorted(BESIDE.items()))
def test_the_systems_deploy_side_by_side_sharing_no_name(overlay: str, beside: str) -> None:
    """The two systems' rendered overlays share no object name, topic, group or prefix, and each
    one's selectors select its own pods only."""
    theirs, ours = render(K8S / beside), render(K8S / overlay)
    names = [{(o["kind"], o["metadata"]["name"]) for o in objects} for objects in (theirs, ours)]
    assert names[0] & names[1] == set()
    configs = [worker_config(theirs), worker_config(ours)]
    assert configs[0]["RATING_SYSTEM"] == "arena" and configs[1]["RATING_SYSTEM"] != "arena"
    for name in SYSTEM_SETTINGS:
        # Only the input topic may be shared (glicko2 rates the arena's games, with its own group).
        shared = name == "RATING_TOPIC_GAMES" and configs[1][name] == BY_NAME["arena"].names.topic_games
        assert (configs[0][name] == configs[1][name]) == shared, name
    for mine, other in ((ours, theirs), (theirs, ours)):
        assert all(selected(s, mine) for s in selectors_of(mine))
        assert not any(selected(s, other) for s in selectors_of(mine))
    # Every object's name carries the overlay's suffix (the ConfigMap's before its hash).
    for obj in ours:
        name = obj["metadata"]["name"]
        if obj["kind"] == "ConfigMap":
            name = re.sub(r"-[a-z0-9]{10}$", "", name)
        assert name.endswith(f"-{configs[1]['RATING_SYSTEM']}"), (obj["kind"], name)
    # Both in one namespace, and the same cluster settings (the one overlay is on the other).
    assert (
        workers(ours, "Deployment")["metadata"]["namespace"] == workers(theirs, "Deployment")["metadata"]["namespace"]
    )
    assert configs[0]["RATING_KAFKA_BOOTSTRAP_SERVERS"] == configs[1]["RATING_KAFKA_BOOTSTRAP_SERVERS"]


@pytest.mark.parametrize("overlay", TARGETS)
def test_each_overlay_sets_its_systems_names_explicitly(overlay: str) -> None:
    """The names in the rendered ConfigMap are the system's defaults (the contract's table), each
    set by the overlay's system component, none left to the worker's defaults."""
    config = worker_config(render(K8S / overlay))
    names = BY_NAME[config["RATING_SYSTEM"]].names
    assert [config[f"RATING_{field.upper()}"] for field in names._fields] == list(names)


# --- the dashboard


def test_the_dashboard_ships_as_a_configmap_for_the_grafana_sidecar(rendered: list[dict[str, Any]]) -> None:
    if not ships_shared(rendered):  # one dashboard for the namespace, the arena's overlay's
        assert [o for o in rendered if "dashboard" in o["metadata"]["name"]] == []
        return
    shipped = by_kind(rendered, "ConfigMap", "rating-worker-dashboard")  # no hash suffix: a fixed name
    assert shipped["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(shipped["data"][DASHBOARD.name]) == json.loads(DASHBOARD.read_text())
    assert not (DEPLOY / "grafana").exists(), "the dashboard's single source is under deploy/k8s/base/grafana"


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


def variables(board: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in board["templating"]["list"]}


# Grafana's own variables, by a sample value of theirs; the dashboard's query variables get
# `sample-<name>`. An undefined variable is a KeyError.
GRAFANA_BUILT_INS = {"__rate_interval": "5m", "__interval": "1m", "__range": "1h"}


def with_samples(query: str, board: dict[str, Any]) -> str:
    """`query` with every Grafana variable replaced by a sample value, so that PromQL parses it."""
    samples = {name: f"sample-{name}" for name, v in variables(board).items() if v["type"] == "query"}
    samples |= GRAFANA_BUILT_INS
    return re.sub(r"\$\{?(\w+)\}?", lambda m: samples[m[1]], query)


def selectors(expr: promql_parser.Expr) -> list[promql_parser.VectorSelector]:
    found: list[promql_parser.VectorSelector] = []

    def visit(node: promql_parser.Expr) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            found.append(node)

    promql_parser.walk(expr, visit)
    return found


def matchers(selector: promql_parser.VectorSelector) -> set[tuple[str, str, str]]:
    return {(m.name, str(m.op), m.value) for m in selector.matchers.matchers}


EQUAL, RE = str(promql_parser.MatchOp.Equal), str(promql_parser.MatchOp.Re)
SCOPE = {("namespace", EQUAL, "sample-namespace"), ("job", EQUAL, "sample-job"), ("pod", RE, "sample-pod")}


def test_the_dashboard_is_scoped_by_namespace_job_and_pod() -> None:
    board = dashboard()
    found = variables(board)
    label_values = re.compile(r"^label_values\((.+),\s*(\w+)\)$")
    chained: dict[str, set[str]] = {"namespace": set(), "job": {"namespace"}, "pod": {"namespace", "job"}}
    for name, before in chained.items():
        variable = found[name]
        assert variable["type"] == "query" and variable["datasource"]["uid"] == "${datasource}"
        match = label_values.match(variable["query"])
        assert match and match[2] == name, variable["query"]
        (selector,) = selectors(promql_parser.parse(with_samples(match[1], board)))
        assert selector.name == "rating_build_info"
        assert {m[0] for m in matchers(selector)} == before, f"{name} is chained to {before}"
    assert found["pod"]["multi"] and found["pod"]["includeAll"] and found["pod"]["allValue"] == ".*"
    for panel in board["panels"]:
        assert panel.get("description", "").strip(), f"{panel['title']}: no description"
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            ranges = re.findall(r"\[([^\]]*)\]", target["expr"])
            assert set(ranges) <= {"$__rate_interval"}, (panel["title"], target["expr"])
            if re.search(r"\b(rate|increase|irate)\(", target["expr"]):
                assert ranges, (panel["title"], target["expr"])
            for selector in selectors(promql_parser.parse(with_samples(target["expr"], board))):
                assert matchers(selector) >= SCOPE, (panel["title"], target["expr"])
    assert len({panel["id"] for panel in board["panels"]}) == len(board["panels"])


# --- PromQL: the alerts and the dashboard


def exported_metric_names() -> set[str]:
    """Every series name the registry knows, histogram and counter suffixes included; and those of
    a per-period system's workers and of tornelo's close follower, registered in them only
    (`worker.metrics.PERIODIC`, `worker.metrics.FOLLOWER`)."""
    names = {name for names in REGISTRY._collector_to_names.values() for name in names}
    own = (*worker.metrics.PERIODIC, *worker.metrics.FOLLOWER)
    described = [d for metric in own for d in metric.describe()]
    return names | {d.name + ("_total" if d.type == "counter" else "") for d in described}


def expressions() -> list[str]:
    rules = yaml.safe_load((K8S / "base/prometheusrule.yaml").read_text())
    exprs = [r["expr"] for g in rules["spec"]["groups"] for r in g["rules"]]
    board = dashboard()
    exprs += [with_samples(t["expr"], board) for p in board["panels"] for t in p["targets"]]
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


def test_the_alerts_and_the_dashboard_hold_for_every_rating_system() -> None:
    """No expression selects a kind, category, skip reason or system of its own: each holds for a
    deployment of any system (its series differ by those values and by `system`, not by name)."""

    values = {"system": set(BY_NAME)}
    values["kind"] = {k.value for spec in BUILT_IN for k in spec.rules.kinds}
    values["category"] = {c for spec in BUILT_IN for c in spec.rules.categories}
    values["reason"] = {r.value for spec in BUILT_IN for r in spec.rules.skips}
    for expr in expressions():
        for selector in selectors(promql_parser.parse(expr)):
            for name, _, value in matchers(selector):
                assert name not in values, f"{expr}: selects {name}={value!r}, which only some systems have"

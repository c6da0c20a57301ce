"""A small kustomize render: what `kustomize build` does with the features deploy/ uses.

resources (files and directories), namespace, labels (with includeSelectors), images and
strategic-merge patches (maps merged, lists of named items merged by name). No kustomize
binary is available on these machines; where one is, `kustomize build` must give the same.
"""

import copy
from pathlib import Path
from typing import Any

import yaml

CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition"}


def build(directory: Path) -> list[dict[str, Any]]:
    spec = yaml.safe_load((directory / "kustomization.yaml").read_text())
    objects: list[dict[str, Any]] = []
    for resource in spec.get("resources", []):
        path = directory / resource
        if path.is_dir():
            objects += build(path)
        else:
            objects += [d for d in yaml.safe_load_all(path.read_text()) if d]
    for patch in spec.get("patches", []):
        overlay = yaml.safe_load((directory / patch["path"]).read_text())
        target = _find(objects, overlay["kind"], overlay["metadata"]["name"])
        _merge(target, overlay)
    for label in spec.get("labels", []):
        for obj in objects:
            _label(obj, label["pairs"], label.get("includeSelectors", False))
    for image in spec.get("images", []):
        for obj in objects:
            for container in _containers(obj):
                name, _, _tag = container["image"].partition(":")
                if name == image["name"]:
                    container["image"] = f"{image.get('newName', name)}:{image['newTag']}"
    if "namespace" in spec:
        for obj in objects:
            if obj["kind"] not in CLUSTER_SCOPED:
                obj["metadata"]["namespace"] = spec["namespace"]
    return objects


def _find(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    for obj in objects:
        if obj["kind"] == kind and obj["metadata"]["name"] == name:
            return obj
    raise KeyError(f"patch target {kind}/{name} not found")


def _merge(target: dict[str, Any], overlay: dict[str, Any]) -> None:
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        elif (
            isinstance(value, list)
            and isinstance(target.get(key), list)
            and all(isinstance(v, dict) and "name" in v for v in value)
        ):
            for item in value:
                match = next((t for t in target[key] if t.get("name") == item["name"]), None)
                if match is None:
                    target[key].append(copy.deepcopy(item))
                else:
                    _merge(match, item)
        else:
            target[key] = copy.deepcopy(value)


def _label(obj: dict[str, Any], pairs: dict[str, str], selectors: bool) -> None:
    obj["metadata"].setdefault("labels", {}).update(pairs)
    if not selectors:
        return
    spec = obj.get("spec", {})
    if obj["kind"] in ("Deployment", "StatefulSet"):
        spec["selector"].setdefault("matchLabels", {}).update(pairs)
        spec["template"]["metadata"].setdefault("labels", {}).update(pairs)
    elif obj["kind"] in ("PodDisruptionBudget", "PodMonitor"):
        spec["selector"].setdefault("matchLabels", {}).update(pairs)


def _containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    if obj["kind"] not in ("Deployment", "StatefulSet"):
        return []
    containers: list[dict[str, Any]] = obj["spec"]["template"]["spec"]["containers"]
    return containers

"""The Helm chart, checked with the real tools: Helm's engine and Kubernetes' schemas.

- ``helm_python`` (helm-python-sdk) binds the Helm v4 Go SDK: ``lint``, ``render`` and the
  values schema are exactly what ``helm lint``, ``helm template`` and ``helm install`` run.
- ``kubernetes_validate`` holds the Kubernetes API's JSON schemas; every rendered object is
  validated strictly (unknown fields are errors) against :data:`KUBE_VERSIONS`. The two
  Prometheus Operator kinds (:data:`CRD_KINDS`) have no schema there: they are skipped by
  name, and their structure is checked by hand (and the rules by ``promtool``).
- The settings file in the ConfigMap is checked by the agent itself, ``python -m driftwatch
  config validate``, with the environment the container would get.

Both libraries are test dependencies; without them these tests skip locally and fail in CI
(``DRIFTWATCH_REQUIRE_TOOLS=1``), like every other missing tool.
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
import shutil
import subprocess
import sys
import typing
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from driftwatch.settings import load_settings, read_settings_file
from tests.conftest import require_tool, tool_missing
from tests.helm import values_schema

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "driftwatch"
MODEL_CHART = Path(__file__).resolve().parent / "fixtures" / "model-chart"

KUBE_VERSIONS = ("1.25.0", "1.30.0")
"""Kubernetes versions the manifests are validated against: the oldest the chart supports
(Chart.yaml's kubeVersion) and a pinned current one."""

CRD_KINDS = frozenset({"ServiceMonitor", "PodMonitor", "PrometheusRule"})
"""Custom resources (Prometheus Operator): not in Kubernetes' schemas, checked by hand."""

RELEASE = "dw"
NAMESPACE = "ml"
IMAGE = "registry.example.com/driftwatch-agent"
"""The image.repository every test sets, as every user must: no public image exists."""
SECRET_VALUE = "not-a-real-secret"


# ------------------------------------------------------------------------------------------
# tools


def _import(module: str, package: str) -> ModuleType:
    try:
        return __import__(module)
    except ImportError as exc:
        tool_missing(package, f"{exc} (pip install {package})")


@pytest.fixture(scope="session")
def helm() -> ModuleType:
    return _import("helm_python", "helm-python-sdk")


@pytest.fixture(scope="session")
def kube() -> ModuleType:
    return _import("kubernetes_validate", "kubernetes-validate")


@pytest.fixture(scope="session")
def chart(helm: ModuleType) -> Iterator[Any]:
    with helm.Chart.load(CHART) as loaded:
        yield loaded


Manifests = dict[tuple[str, str], dict[str, Any]]


def with_image(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` with ``image.repository`` set to :data:`IMAGE` unless they set it."""
    copied = copy.deepcopy(dict(values))
    copied["image"] = {"repository": IMAGE, **copied.get("image", {})}
    return copied


def render(chart: Any, values: Mapping[str, Any]) -> Manifests:
    """Every object the chart renders with ``values`` (and :data:`IMAGE`), by (kind, name)."""
    rendered = chart.render(with_image(values), name=RELEASE, namespace=NAMESPACE)
    return parse(rendered)


def parse(rendered: Mapping[str, str]) -> Manifests:
    objects: Manifests = {}
    for path, text in rendered.items():
        if path.endswith("NOTES.txt"):
            continue
        for document in yaml.safe_load_all(text):
            if not document:
                continue
            key = (document["kind"], document["metadata"]["name"])
            assert key not in objects, f"{key} rendered twice"
            objects[key] = document
    return objects


def one(objects: Manifests, kind: str) -> dict[str, Any]:
    found = [o for (k, _), o in objects.items() if k == kind]
    assert len(found) == 1, f"expected one {kind}, got {[n for k, n in objects if k == kind]}"
    return found[0]


def kinds(objects: Manifests) -> list[str]:
    return sorted(kind for kind, _ in objects)


def validate_all(kube: ModuleType, objects: Manifests) -> None:
    """Every object against Kubernetes' schemas (strict); custom resources by hand."""
    for (kind, name), obj in objects.items():
        if kind in CRD_KINDS:
            CRD_CHECKS[kind](obj)
            continue
        for version in KUBE_VERSIONS:
            try:
                kube.validate(obj, version, strict=True)
            except kube.ValidationError as exc:
                pytest.fail(f"{kind}/{name} is invalid for Kubernetes {version}: "
                            f"{'.'.join(map(str, exc.path))}: {exc.message}", pytrace=False)


# ------------------------------------------------------------------------------------------
# custom resources, by hand


DURATION = re.compile(r"^([0-9]+(ms|s|m|h|d|w|y))+$")


def _string_map(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    )


def check_service_monitor(obj: dict[str, Any]) -> None:
    assert obj["apiVersion"] == "monitoring.coreos.com/v1"
    assert set(obj) == {"apiVersion", "kind", "metadata", "spec"}
    assert _string_map(obj["metadata"]["labels"])
    spec = obj["spec"]
    assert set(spec) <= {"namespaceSelector", "selector", "endpoints", "jobLabel"}
    assert spec["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    assert _string_map(spec["selector"]["matchLabels"]) and set(spec["selector"]) == {
        "matchLabels"
    }
    assert spec["endpoints"], "no endpoints"
    for endpoint in spec["endpoints"]:
        assert set(endpoint) <= {"port", "path", "scheme", "interval", "scrapeTimeout",
                                 "tlsConfig", "basicAuth", "relabelings", "metricRelabelings"}
        assert isinstance(endpoint["port"], str) and endpoint["path"] == "/metrics"
        assert endpoint["scheme"] in ("http", "https")
        assert DURATION.match(endpoint["interval"]) and DURATION.match(endpoint["scrapeTimeout"])
        for part in endpoint.get("basicAuth", {}).values():
            assert set(part) == {"name", "key"} and all(isinstance(v, str) for v in part.values())


def check_pod_monitor(obj: dict[str, Any]) -> None:
    assert obj["apiVersion"] == "monitoring.coreos.com/v1"
    assert set(obj) == {"apiVersion", "kind", "metadata", "spec"}
    assert _string_map(obj["metadata"]["labels"])
    spec = obj["spec"]
    assert set(spec) <= {"namespaceSelector", "selector", "podMetricsEndpoints", "jobLabel"}
    assert spec["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    assert set(spec["selector"]) == {"matchLabels"}
    assert _string_map(spec["selector"]["matchLabels"]) and spec["selector"]["matchLabels"]
    assert spec["podMetricsEndpoints"], "no endpoints"
    for endpoint in spec["podMetricsEndpoints"]:
        assert set(endpoint) <= {"port", "path", "scheme", "interval", "scrapeTimeout",
                                 "tlsConfig", "basicAuth", "relabelings", "metricRelabelings"}
        assert endpoint["port"] == "dw-metrics" and endpoint["path"] == "/metrics"
        assert endpoint["scheme"] in ("http", "https")
        assert DURATION.match(endpoint["interval"]) and DURATION.match(endpoint["scrapeTimeout"])
        for part in endpoint.get("basicAuth", {}).values():
            assert set(part) == {"name", "key"} and all(isinstance(v, str) for v in part.values())


def check_prometheus_rule(obj: dict[str, Any]) -> None:
    assert obj["apiVersion"] == "monitoring.coreos.com/v1"
    assert set(obj) == {"apiVersion", "kind", "metadata", "spec"}
    assert set(obj["spec"]) == {"groups"}
    names = [group["name"] for group in obj["spec"]["groups"]]
    assert len(names) == len(set(names)), f"duplicate group names: {names}"
    for group in obj["spec"]["groups"]:
        assert set(group) <= {"name", "interval", "rules", "limit", "partial_response_strategy"}
        assert group["rules"], f"group {group['name']} has no rules"
        for rule in group["rules"]:
            assert ("alert" in rule) != ("record" in rule), rule
            assert isinstance(rule["expr"], str) and rule["expr"].strip()
            allowed = {"alert", "expr", "for", "labels", "annotations", "keep_firing_for"}
            assert set(rule) <= (allowed if "alert" in rule else {"record", "expr", "labels"})
            if "for" in rule:
                assert DURATION.match(rule["for"]), rule["for"]
            assert _string_map(rule.get("labels", {})) and _string_map(rule.get("annotations", {}))


CRD_CHECKS = {"ServiceMonitor": check_service_monitor, "PodMonitor": check_pod_monitor,
              "PrometheusRule": check_prometheus_rule}


# ------------------------------------------------------------------------------------------
# the agent's own validation of the rendered settings file


def container_env(container: Mapping[str, Any]) -> dict[str, str]:
    """The container's environment, each Secret reference replaced by a stand-in value."""
    env = {}
    for var in container.get("env", []):
        if "value" in var:
            env[var["name"]] = var["value"]
        else:
            assert set(var["valueFrom"]) == {"secretKeyRef"}, var
            env[var["name"]] = SECRET_VALUE
    return env


def config_validate(tmp_path: Path, settings_text: str,
                    env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    """``python -m driftwatch config validate`` on the file, with only ``env`` as DRIFTWATCH_*.

    ``--no-file-checks``: the TLS files the settings name are mounted from Secrets in the pod
    (where the chart's `helm test` pod runs the full check), not present here."""
    path = tmp_path / "driftwatch.yaml"
    path.write_text(settings_text, encoding="utf-8")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DRIFTWATCH_")}
    return subprocess.run(
        [sys.executable, "-m", "driftwatch", "config", "validate", "--no-file-checks", str(path)],
        env={**clean, **env}, capture_output=True, text=True, timeout=60, cwd=ROOT,
    )


def settings_text(objects: Manifests) -> str:
    configmap = objects[("ConfigMap", f"{RELEASE}-driftwatch")]
    text: str = configmap["data"]["driftwatch.yaml"]
    return text


def agent_container(pod_spec: Mapping[str, Any]) -> dict[str, Any]:
    found = [c for c in pod_spec["containers"] if c["name"] == "driftwatch"]
    assert len(found) == 1
    return found[0]


# ------------------------------------------------------------------------------------------
# values combinations

SASL = {
    "settings": {
        "kafka": {
            "bootstrap_servers": ["kafka-0.kafka:9093", "kafka-1.kafka:9093"],
            "topics": ["scores"],
            "security_protocol": "SASL_SSL",
            "sasl_mechanism": "SCRAM-SHA-512",
            "ssl_cafile": "/var/run/secrets/driftwatch/kafka-tls/ca.crt",
        },
    },
    "secrets": {
        "kafka": {"name": "kafka-credentials", "saslUsernameKey": "user",
                  "saslPasswordKey": "password"},
        "kafkaTls": {"name": "kafka-ca"},
    },
}

EVERYTHING = {
    **SASL,
    "settings": {
        **SASL["settings"],
        "events": {"model_source": "key"},
        "monitoring": {
            "defaults": {
                "window_size": 2000,
                "sample_every": 50,
                "watches": [
                    {"measure": "auc", "detectors": [
                        {"name": "page_hinkley", "params": {"delta": 0.005, "threshold": 50}},
                    ]},
                    {"measure": "gmean", "normalized": True, "floor": 0.8,
                     "detectors": [{"name": "adwin", "params": {"delta": 1e-7}}]},
                ],
            },
            "models": {"fraud-v2": {"window_size": 5000}},
        },
        "limits": {"max_models": 20},
        "metrics": {"port": 9200, "tls_certfile": "/var/run/secrets/driftwatch/metrics-tls/tls.crt",
                    "tls_keyfile": "/var/run/secrets/driftwatch/metrics-tls/tls.key"},
        "checkpoint": {"directory": "/data/driftwatch", "interval_seconds": 10},
        "logging": {"level": "DEBUG", "format": "json"},
    },
    "secrets": {
        **SASL["secrets"],
        "metricsBasicAuth": {"name": "driftwatch-scrape"},
        "metricsTls": {"name": "driftwatch-metrics-tls"},
    },
    "persistence": {"enabled": True, "storageClassName": "fast", "size": "2Gi"},
    "serviceMonitor": {"enabled": True, "labels": {"release": "kube-prometheus-stack"},
                       "tlsConfig": {"insecureSkipVerify": True}},
    "prometheusRule": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}},
    "grafanaDashboard": {"enabled": True, "namespace": "monitoring",
                         "annotations": {"grafana_folder": "ML"}},
    "extraEnv": [{"name": "TZ", "value": "UTC"}],
    "nodeSelector": {"kubernetes.io/os": "linux"},
    "tolerations": [{"key": "ml", "operator": "Exists", "effect": "NoSchedule"}],
}

SCALED = {
    "replicaCount": 3,
    "settings": {"kafka": {"bootstrap_servers": ["kafka:9092"], "topics": ["scores"]},
                 "events": {"model_source": "key"}},
    "topologySpreadConstraints": [{
        "maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
        "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "driftwatch"}},
    }],
}

SIDECAR = {
    "mode": "sidecar",
    "settings": {"kafka": {"topics": ["fraud-v2-scores"]},
                 "events": {"model_source": "constant", "model_constant": "fraud-v2"}},
    "serviceMonitor": {"enabled": True},
}

LOCKED_DOWN = {
    "settings": {
        "kafka": {"bootstrap_servers": ["kafka-0.kafka:9093", "kafka-1.kafka:9093",
                                        "kafka-ext.example.com:19092"]},
        "events": {"model_source": "key"},
        "alerts": {"defaults": {"auc_floor": 0.75, "no_events_seconds": 900},
                   "models": {"fraud-v2": {"auc_floor": 0.8, "auc_max_drop": 0.03},
                              "churn-daily": {"batch_labels": True,
                                              "no_events_seconds": 93_600}}},
    },
    "networkPolicy": {
        "enabled": True,
        "metrics": {"from": [{"namespaceSelector": {"matchLabels": {
            "kubernetes.io/metadata.name": "observability"}},
            "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}}]},
        "kafka": {"to": [{"namespaceSelector": {"matchLabels": {
            "kubernetes.io/metadata.name": "kafka"}}}, {"ipBlock": {"cidr": "10.20.0.0/16"}}]},
    },
    "podMonitor": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}},
    "prometheusRule": {
        "enabled": True,
        "alerts": {
            "DriftwatchNoEvents": {"for": "10m", "severity": "critical",
                                   "labels": {"team": "fraud", "env": "staging"}},
            "DriftwatchAucDropped": {"severity": "info"},
            "DriftwatchAgentNotReady": {"enabled": False},
        },
        "alertLabels": {"env": "prod"},
        "runbookUrl": "https://wiki.example.com/ml/driftwatch-runbook",
        "grafanaUrl": "https://grafana.example.com/",
    },
}

SCENARIOS: dict[str, dict[str, Any]] = {
    "standalone-defaults": {},
    "standalone-everything": EVERYTHING,
    "standalone-sasl": SASL,
    "standalone-replicas-pdb": SCALED,
    "standalone-locked-down": LOCKED_DOWN,
    "sidecar": SIDECAR,
}

EXPECTED_KINDS = {
    "standalone-defaults": ["ConfigMap", "Deployment", "Pod", "Service", "ServiceAccount"],
    "standalone-everything": ["ConfigMap", "ConfigMap", "Deployment", "PersistentVolumeClaim",
                              "Pod", "PrometheusRule", "Service", "ServiceAccount",
                              "ServiceMonitor"],
    "standalone-sasl": ["ConfigMap", "Deployment", "Pod", "Service", "ServiceAccount"],
    "standalone-replicas-pdb": ["ConfigMap", "Deployment", "Pod", "PodDisruptionBudget",
                                "Service", "ServiceAccount"],
    "standalone-locked-down": ["ConfigMap", "Deployment", "NetworkPolicy", "Pod", "PodMonitor",
                               "PrometheusRule", "Service", "ServiceAccount"],
    "sidecar": ["ConfigMap", "Pod", "Service", "ServiceMonitor"],
}


# ------------------------------------------------------------------------------------------
# lint


@pytest.mark.parametrize("scenario", ["standalone-defaults", "standalone-everything",
                                      "standalone-locked-down", "sidecar"])
def test_lint_is_clean(helm: ModuleType, scenario: str) -> None:
    report = helm.lint(CHART, with_image(SCENARIOS[scenario]), strict=True,
                       namespace=NAMESPACE, kube_version="v1.30.0")
    assert report["errors"] == []
    problems = [m for m in report["messages"] if m["severity"] >= 2]
    assert problems == [], problems
    # Information only: Helm recommends an icon, and the project has none to point at.
    infos = [m["error"] for m in report["messages"] if m["severity"] < 2]
    assert infos in ([], ["icon is recommended"]), infos


# ------------------------------------------------------------------------------------------
# render + Kubernetes schemas + the agent's validation


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_renders_valid_kubernetes_objects(chart: Any, kube: ModuleType, scenario: str) -> None:
    objects = render(chart, SCENARIOS[scenario])
    assert kinds(objects) == EXPECTED_KINDS[scenario]
    validate_all(kube, objects)
    for obj in objects.values():
        namespace = obj["metadata"]["namespace"]
        assert namespace == ("monitoring" if obj["metadata"]["name"].endswith("-dashboard")
                             else NAMESPACE)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_settings_file_passes_driftwatch_config_validate(
    chart: Any, tmp_path: Path, scenario: str
) -> None:
    objects = render(chart, SCENARIOS[scenario])
    text = settings_text(objects)
    assert SECRET_VALUE not in text and "password" not in text
    # The environment the agent gets: from the Deployment, or from the helm test Pod (the
    # same env helper) in sidecar mode, where the Deployment is the model chart's.
    pod = objects[("Pod", f"{RELEASE}-driftwatch-test-settings")]
    env = container_env(pod["spec"]["containers"][0])
    deployments = [o for (k, _), o in objects.items() if k == "Deployment"]
    if deployments:
        assert container_env(agent_container(deployments[0]["spec"]["template"]["spec"])) == env
    result = config_validate(tmp_path, text, env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().endswith(": ok")
    # The file, read as the agent reads it, is values.settings key for key (plus the computed
    # group_id and client_id, and the sidecar's whole-stream assignment). (The agent's YAML
    # reads 1e-07 as a number; PyYAML would not.)
    settings = read_settings_file(tmp_path / "driftwatch.yaml")
    values = chart.merge_values(SCENARIOS[scenario])
    given = copy.deepcopy(values["settings"])
    given["kafka"].setdefault("group_id", f"{RELEASE}-driftwatch")
    given["kafka"].setdefault("client_id", f"{RELEASE}-driftwatch")
    if values["mode"] == "sidecar" and values["sidecar"]["wholeStream"]:
        given["kafka"].setdefault("assignment", "all_partitions")
    assert settings == given


def test_sasl_password_comes_only_from_the_secret(chart: Any, tmp_path: Path) -> None:
    objects = render(chart, SASL)
    container = agent_container(one(objects, "Deployment")["spec"]["template"]["spec"])
    refs = {v["name"]: v["valueFrom"]["secretKeyRef"] for v in container["env"]
            if "valueFrom" in v}
    assert refs == {
        "DRIFTWATCH_KAFKA__SASL_PLAIN_USERNAME": {"name": "kafka-credentials", "key": "user"},
        "DRIFTWATCH_KAFKA__SASL_PLAIN_PASSWORD": {"name": "kafka-credentials",
                                                 "key": "password"},
    }
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    assert mounts["driftwatch-kafka-tls"] == {
        "name": "driftwatch-kafka-tls", "mountPath": "/var/run/secrets/driftwatch/kafka-tls",
        "readOnly": True,
    }
    # Without the Secret's variables the file alone is incomplete: the agent says which key.
    result = config_validate(tmp_path, settings_text(objects), {})
    assert result.returncode == 2
    assert "kafka.sasl_plain_password (DRIFTWATCH_KAFKA__SASL_PLAIN_PASSWORD)" in result.stderr


# ------------------------------------------------------------------------------------------
# the standalone Deployment


def test_standalone_deployment(chart: Any) -> None:
    objects = render(chart, {})
    deployment = one(objects, "Deployment")
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"] == {
        "type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    pod = deployment["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False
    assert pod["serviceAccountName"] == one(objects, "ServiceAccount")["metadata"]["name"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    container = agent_container(pod)
    assert container["image"] == f"{IMAGE}:0.2.0"
    assert "command" not in container and "args" not in container  # the image's `driftwatch run`
    assert container["env"] == [
        {"name": "DRIFTWATCH_CONFIG", "value": "/etc/driftwatch/driftwatch.yaml"}]
    assert container["ports"] == [{"name": "dw-metrics", "containerPort": 9108,
                                   "protocol": "TCP"}]
    for probe, path in (("startupProbe", "/healthz"), ("livenessProbe", "/healthz"),
                        ("readinessProbe", "/readyz")):
        assert container[probe]["httpGet"] == {"path": path, "port": "dw-metrics",
                                               "scheme": "HTTP"}
    assert container["securityContext"] == {
        "runAsNonRoot": True, "runAsUser": 10001, "runAsGroup": 10001,
        "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
        "privileged": False, "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert container["resources"] == {"requests": {"cpu": "100m", "memory": "128Mi"},
                                      "limits": {"memory": "256Mi"}}
    # The settings file where DRIFTWATCH_CONFIG points; the checkpoint volume where the
    # settings' checkpoint.directory points; a writable /tmp; nothing else writable.
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    assert mounts == {"/etc/driftwatch": "driftwatch-config", "/tmp": "driftwatch-tmp",
                      "/var/lib/driftwatch": "driftwatch-state"}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["driftwatch-config"]["configMap"]["name"] == f"{RELEASE}-driftwatch"
    assert volumes["driftwatch-state"]["emptyDir"] == {"sizeLimit": "64Mi"}
    settings = yaml.safe_load(settings_text(objects))
    assert settings["checkpoint"]["directory"] == "/var/lib/driftwatch"
    assert settings["kafka"]["group_id"] == f"{RELEASE}-driftwatch"
    # The Service selects exactly the agent Pods, not the helm test Pod.
    service = one(objects, "Service")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    test_pod = objects[("Pod", f"{RELEASE}-driftwatch-test-settings")]
    assert not service["spec"]["selector"].items() <= test_pod["metadata"]["labels"].items()
    assert service["spec"]["ports"] == [{"name": "metrics", "port": 9108,
                                         "targetPort": "dw-metrics", "protocol": "TCP"}]
    assert service["spec"]["publishNotReadyAddresses"] is True


def test_metrics_port_tls_and_persistence(chart: Any) -> None:
    objects = render(chart, EVERYTHING)
    deployment = one(objects, "Deployment")
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    pod = deployment["spec"]["template"]["spec"]
    container = agent_container(pod)
    assert container["ports"][0]["containerPort"] == 9200
    assert container["readinessProbe"]["httpGet"]["scheme"] == "HTTPS"
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    assert mounts["/data/driftwatch"] == "driftwatch-state"
    claim = one(objects, "PersistentVolumeClaim")
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["driftwatch-state"] == {
        "name": "driftwatch-state",
        "persistentVolumeClaim": {"claimName": claim["metadata"]["name"]}}
    assert claim["spec"]["resources"]["requests"]["storage"] == "2Gi"
    assert claim["spec"]["storageClassName"] == "fast"
    assert claim["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    env = {v["name"] for v in container["env"]}
    assert {"DRIFTWATCH_METRICS__BASIC_AUTH_USERNAME",
            "DRIFTWATCH_METRICS__BASIC_AUTH_PASSWORD", "TZ"} <= env


def test_replicas_get_a_disruption_budget(chart: Any) -> None:
    objects = render(chart, SCALED)
    assert one(objects, "Deployment")["spec"]["replicas"] == 3
    pdb = one(objects, "PodDisruptionBudget")
    assert pdb["spec"] == {
        "maxUnavailable": 1,
        "selector": {"matchLabels": one(objects, "Deployment")["spec"]["selector"]
                     ["matchLabels"]},
    }
    with_floor = render(chart, {**SCALED, "podDisruptionBudget": {"minAvailable": "50%"}})
    assert one(with_floor, "PodDisruptionBudget")["spec"]["minAvailable"] == "50%"
    # One replica: no budget (it would only block node drains or do nothing).
    assert "PodDisruptionBudget" not in kinds(render(chart, {}))


def test_static_membership_names_each_member_after_its_pod(
    chart: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """staticMembership: kafka.group_instance_id is each Pod's name (the Downward API), so a
    container restarted in its Pod rejoins as the member it was; the settings file with that
    variable set, as the Pod gets it, reaches the consumer."""
    def env(objects: Manifests) -> dict[str, Any]:
        pod = one(objects, "Deployment")["spec"]["template"]["spec"]
        return {e["name"]: e for e in agent_container(pod)["env"]}

    assert "DRIFTWATCH_KAFKA__GROUP_INSTANCE_ID" not in env(render(chart, SCALED))
    objects = render(chart, {**SCALED, "staticMembership": True})
    assert env(objects)["DRIFTWATCH_KAFKA__GROUP_INSTANCE_ID"] == {
        "name": "DRIFTWATCH_KAFKA__GROUP_INSTANCE_ID",
        "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
    path = tmp_path / "driftwatch.yaml"
    path.write_text(settings_text(objects))
    pod_name = f"{RELEASE}-driftwatch-5d8f7c9b6-x2k4q"
    monkeypatch.setenv("DRIFTWATCH_KAFKA__GROUP_INSTANCE_ID", pod_name)
    settings = load_settings(path, check_files=False)
    assert settings.kafka.consumer_config()["group_instance_id"] == pod_name


def test_settings_change_rolls_the_pods(chart: Any) -> None:
    def checksum(values: dict[str, Any]) -> str:
        deployment = one(render(chart, values), "Deployment")
        annotation: str = deployment["spec"]["template"]["metadata"]["annotations"][
            "checksum/driftwatch-config"]
        return annotation

    base = checksum({})
    assert re.fullmatch(r"[0-9a-f]{64}", base)
    assert checksum({"replicaCount": 2}) == base
    assert checksum({"settings": {"logging": {"level": "DEBUG"}}}) != base


# ------------------------------------------------------------------------------------------
# ServiceMonitor, PrometheusRule, dashboard


def test_monitoring_objects(chart: Any, tmp_path: Path) -> None:
    objects = render(chart, EVERYTHING)
    service = one(objects, "Service")
    monitor = one(objects, "ServiceMonitor")
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= \
        service["metadata"]["labels"].items()
    endpoint = monitor["spec"]["endpoints"][0]
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
    assert endpoint["scheme"] == "https"
    assert endpoint["tlsConfig"] == {"insecureSkipVerify": True}
    assert endpoint["basicAuth"] == {
        "username": {"name": "driftwatch-scrape", "key": "username"},
        "password": {"name": "driftwatch-scrape", "key": "password"},
    }

    # The rules are files/alerts.yaml's, unchanged (their {{ $labels }} never evaluated).
    rule = one(objects, "PrometheusRule")
    source = yaml.safe_load((CHART / "files" / "alerts.yaml").read_text(encoding="utf-8"))
    assert rule["spec"]["groups"] == source["groups"]
    # The job the ServiceMonitor produces (the Service's name) is one the rules count as an agent.
    assert "driftwatch" in service["metadata"]["name"]
    promtool = require_tool("promtool", "apt-get install prometheus")
    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}), encoding="utf-8")
    checked = subprocess.run([promtool, "check", "rules", str(rules_file)],
                             capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr

    dashboard = objects[("ConfigMap", f"{RELEASE}-driftwatch-dashboard")]
    assert dashboard["metadata"]["namespace"] == "monitoring"
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert dashboard["metadata"]["annotations"] == {"grafana_folder": "ML"}
    assert json.loads(dashboard["data"]["driftwatch.json"]) == json.loads(
        (CHART / "files" / "dashboard.json").read_text(encoding="utf-8"))


def _rules(objects: Manifests) -> dict[str, dict[str, Any]]:
    groups = one(objects, "PrometheusRule")["spec"]["groups"]
    return {rule.get("alert") or rule["record"]: rule for g in groups for rule in g["rules"]}


HOLDS = {
    # alert: (its for: in files/alerts.yaml, the stated hold, a tuned for:, the stated hold then)
    "DriftwatchAucBelowFloor": ("5m", "for 10 minutes", "15m", "for 20 minutes"),
    "DriftwatchChallengerBetter": ("30m", "For 40 minutes", "2h", "For 130 minutes"),
    "DriftwatchAgentDown": ("5m", "for 5 minutes", "1m", "for 1 minute"),
    "DriftwatchLabelsStopped": ("30m", "for 90 minutes", "1h30s", "for 7230 seconds"),
    "DriftwatchNoRecordTime": ("1h", "for 60 minutes", "1d", "for 1440 minutes"),
    "DriftwatchRejectedEvents": ("10m", "For 10 minutes", "0m", "For 0 minutes"),
}


def test_descriptions_state_the_tuned_for(chart: Any) -> None:
    """A description that says how long its condition held ("for 10 minutes": the
    expression's look-back plus ``for:``) says so for the tuned ``for:``; the rest of it, and
    every description of an alert not tuned or stating no hold, is the file's."""
    source = {rule["alert"]: rule for group in yaml.safe_load(
        (CHART / "files" / "alerts.yaml").read_text(encoding="utf-8"))["groups"]
        for rule in group["rules"] if "alert" in rule}
    tuned = {name: {"for": hold[2]} for name, hold in HOLDS.items()}
    tuned["DriftwatchDriftDetected"] = {"for": "5m"}  # states no hold: unchanged
    rules = _rules(render(chart, {"prometheusRule": {"enabled": True, "alerts": tuned}}))
    for name, rule in rules.items():
        if "alert" not in rule:
            continue
        original = source[name]["annotations"]["description"]
        description = rule["annotations"]["description"]
        if name not in HOLDS:
            assert description == original, name
            continue
        was, stated, tuned_for, now = HOLDS[name]
        assert source[name]["for"] == was and rule["for"] == tuned_for
        assert original.count(stated) == 1, (name, original)
        assert description == original.replace(stated, now), name


def test_alerts_tuned_by_values(chart: Any, tmp_path: Path) -> None:
    source = yaml.safe_load((CHART / "files" / "alerts.yaml").read_text(encoding="utf-8"))
    original = {rule.get("alert") or rule["record"]: rule
                for group in source["groups"] for rule in group["rules"]}
    rules = _rules(render(chart, LOCKED_DOWN))
    # Left out: the alert set to enabled: false, and nothing else.
    assert set(original) - set(rules) == {"DriftwatchAgentNotReady"}
    no_events = rules["DriftwatchNoEvents"]
    assert no_events["for"] == "10m"
    # The alert's own labels win over alertLabels; severity is the tuned one.
    assert no_events["labels"] == {"severity": "critical", "team": "fraud", "env": "staging"}
    assert rules["DriftwatchAucDropped"]["labels"] == {"severity": "info", "env": "prod"}
    floor = rules["DriftwatchAucBelowFloor"]
    assert floor["labels"] == {"severity": "warning", "env": "prod"}
    assert floor["for"] == original["DriftwatchAucBelowFloor"]["for"]
    assert floor["expr"] == original["DriftwatchAucBelowFloor"]["expr"]
    for name, rule in rules.items():
        if "alert" not in rule:
            assert rule == original[name]
            continue
        annotations = rule["annotations"]
        assert annotations["runbook_url"] == \
            f"https://wiki.example.com/ml/driftwatch-runbook#{name.lower()}"
        assert annotations["dashboard_url"] == \
            "https://grafana.example.com" + original[name]["annotations"]["dashboard_url"]
        # The Prometheus templates pass through Helm untouched.
        assert annotations["summary"] == original[name]["annotations"]["summary"]
    promtool = require_tool("promtool", "apt-get install prometheus")
    rules_file = tmp_path / "rules.yaml"
    groups = one(render(chart, LOCKED_DOWN), "PrometheusRule")["spec"]["groups"]
    rules_file.write_text(yaml.safe_dump({"groups": groups}), encoding="utf-8")
    checked = subprocess.run([promtool, "check", "rules", str(rules_file)],
                             capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_network_policy(chart: Any) -> None:
    objects = render(chart, LOCKED_DOWN)
    policy = one(objects, "NetworkPolicy")["spec"]
    deployment = one(objects, "Deployment")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert policy["podSelector"]["matchLabels"].items() <= pod_labels.items()
    test_pod = objects[("Pod", f"{RELEASE}-driftwatch-test-settings")]
    assert not policy["podSelector"]["matchLabels"].items() <= \
        test_pod["metadata"]["labels"].items()
    assert policy["policyTypes"] == ["Ingress", "Egress"]
    # Ingress: the container's metrics port, from the configured scrapers only.
    container = agent_container(deployment["spec"]["template"]["spec"])
    (ingress,) = policy["ingress"]
    assert ingress["ports"] == [{"port": container["ports"][0]["name"], "protocol": "TCP"}]
    assert ingress["from"] == LOCKED_DOWN["networkPolicy"]["metrics"]["from"]
    # Egress: the ports of the bootstrap servers, to the brokers' peers; and DNS.
    kafka, dns = policy["egress"]
    assert kafka["ports"] == [{"port": 9093, "protocol": "TCP"},
                              {"port": 19092, "protocol": "TCP"}]
    assert kafka["to"] == LOCKED_DOWN["networkPolicy"]["kafka"]["to"]
    assert dns == {"ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]}
    # Explicit ports, any destination, no DNS, one more rule each way.
    extra_in = {"from": [{"podSelector": {}}], "ports": [{"port": 9108}]}
    extra_out = {"to": [{"ipBlock": {"cidr": "10.30.0.0/24"}}], "ports": [{"port": 4317}]}
    other = one(render(chart, {"networkPolicy": {
        "enabled": True, "metrics": {"from": []}, "kafka": {"ports": [9092, 9094]},
        "dns": False, "extraIngress": [extra_in], "extraEgress": [extra_out]}}),
        "NetworkPolicy")["spec"]
    assert other["ingress"] == [{"ports": [{"port": "dw-metrics", "protocol": "TCP"}]},
                                extra_in]
    assert other["egress"] == [{"ports": [{"port": 9092, "protocol": "TCP"},
                                          {"port": 9094, "protocol": "TCP"}]}, extra_out]


def test_pod_monitor(chart: Any) -> None:
    objects = render(chart, LOCKED_DOWN)
    monitor = one(objects, "PodMonitor")
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    pod = one(objects, "Deployment")["spec"]["template"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= \
        pod["metadata"]["labels"].items()
    endpoint = monitor["spec"]["podMetricsEndpoints"][0]
    assert endpoint["port"] in {p["name"] for p in agent_container(pod["spec"])["ports"]}
    # The Prometheus Operator names the job <namespace>/<name>: one the rules count as an agent.
    assert re.search(".*driftwatch.*", f"{NAMESPACE}/{monitor['metadata']['name']}")
    # HTTPS and basic auth follow the settings, as for the ServiceMonitor.
    secured = one(render(chart, {**EVERYTHING, "serviceMonitor": {"enabled": False},
                                 "podMonitor": {"enabled": True}}), "PodMonitor")
    endpoint = secured["spec"]["podMetricsEndpoints"][0]
    assert endpoint["scheme"] == "https"
    assert endpoint["basicAuth"]["password"] == {"name": "driftwatch-scrape", "key": "password"}


# ------------------------------------------------------------------------------------------
# values schema and the chart's own refusals


BAD_VALUES = [
    ({"replicaCount": -1}, "/replicaCount", "minimum: got -1, want 0"),
    ({"mode": "daemonset"}, "/mode", "value must be one of 'standalone', 'sidecar'"),
    ({"settings": {"monitoring": {"defaults": {"window_size": 0}}}},
     "/settings/monitoring/defaults/window_size", "minimum: got 0, want 1"),
    ({"settings": {"kafka": {"sasl_plain_password": "hunter2"}}},
     "/settings/kafka", "additional properties 'sasl_plain_password' not allowed"),
    ({"settings": {"kafka": {"bootstrap_server": ["kafka:9092"]}}},
     "/settings/kafka", "additional properties 'bootstrap_server' not allowed"),
    ({"settings": {"logging": {"format": "xml"}}}, "/settings/logging/format",
     "value must be one of 'text', 'json'"),
    ({"settings": {"monitoring": {"defaults": {"watches": [{"measure": "auroc"}]}}}},
     "/settings/monitoring/defaults/watches/0/measure", "value must be one of 'auc', "),
    ({"image": {"pullPolicy": "Sometimes"}}, "/image/pullPolicy",
     "value must be one of 'Always', 'IfNotPresent', 'Never'"),
    ({"serviceMonitor": {"interval": "30 seconds"}}, "/serviceMonitor/interval",
     "'30 seconds' does not match pattern"),
    ({"resources": {"requests": {"memory": "lots"}}}, "/resources/requests/memory",
     "'lots' does not match pattern"),
    ({"replicas": 2}, "", "additional properties 'replicas' not allowed"),
    ({"prometheusRule": {"alerts": {"DriftwatchNoEvents": {"for": "ten minutes"}}}},
     "/prometheusRule/alerts/DriftwatchNoEvents/for", "'ten minutes' does not match pattern"),
    ({"prometheusRule": {"alerts": {"DriftwatchNoEvents": {"severity": "page", "delay": 1}}}},
     "/prometheusRule/alerts/DriftwatchNoEvents", "additional properties 'delay' not allowed"),
    ({"networkPolicy": {"kafka": {"ports": [0]}}}, "/networkPolicy/kafka/ports/0",
     "minimum: got 0, want 1"),
    ({"settings": {"alerts": {"defaults": {"auc_floor": 1.5}}}},
     "/settings/alerts/defaults/auc_floor", "maximum: got 1.5, want 1"),
    # A secret (an API key) would land in the ConfigMap: extraEnv from a Secret instead.
    ({"settings": {"exporters": {"otlp": {"headers": {"X-Api-Key": "k"}}}}},
     "/settings/exporters/otlp", "additional properties 'headers' not allowed"),
]


@pytest.fixture(scope="session")
def draft7(kube: ModuleType) -> Any:
    """values.schema.json as a draft-07 validator: what Helm up to 3.17 (gojsonschema)
    understands, checked here by a second implementation (python-jsonschema)."""
    import jsonschema  # a dependency of kubernetes-validate

    schema = json.loads((CHART / "values.schema.json").read_text(encoding="utf-8"))
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


@pytest.mark.parametrize(("values", "path", "expected"), BAD_VALUES,
                         ids=[case[1] or "root" for case in BAD_VALUES])
def test_schema_rejects_bad_values(
    helm: ModuleType, chart: Any, draft7: Any, values: dict[str, Any], path: str,
    expected: str,
) -> None:
    """Refused before anything renders (as by ``helm install``), naming the key and the rule."""
    for check in (chart.validate_schema, lambda v: render(chart, v)):
        with pytest.raises(helm.HelmValuesError) as caught:
            check(copy.deepcopy(values))
        message = str(caught.value)
        assert f"at '{path}': {expected}" in message, message
    errors = draft7.iter_errors(chart.merge_values(copy.deepcopy(values)))
    assert ["".join(f"/{part}" for part in e.absolute_path) for e in errors] == [path]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_schema_accepts_the_scenarios(chart: Any, draft7: Any, scenario: str) -> None:
    chart.validate_schema(copy.deepcopy(SCENARIOS[scenario]))
    draft7.validate(chart.merge_values(copy.deepcopy(SCENARIOS[scenario])))


TEMPLATE_REFUSALS = [
    ({"replicaCount": 2, "persistence": {"enabled": True}},
     "persistence.enabled needs replicaCount 1"),
    ({"settings": {"metrics": {"port": 0}}}, "settings.metrics.port must be a real port"),
    ({"settings": {"checkpoint": {"directory": "state"}}},
     "settings.checkpoint.directory must be an absolute path"),
    ({"secrets": {"kafka": {"saslPasswordKey": "password"}}}, "secrets.kafka.name"),
    ({"prometheusRule": {"enabled": True, "alerts": {"DriftwatchNoEvent": {"for": "1m"}}}},
     "prometheusRule.alerts.DriftwatchNoEvent: no such alert in files/alerts.yaml"),
    ({"serviceMonitor": {"enabled": True}, "podMonitor": {"enabled": True}},
     "serviceMonitor.enabled and podMonitor.enabled: choose one"),
    ({"staticMembership": True, "settings": {"kafka": {"assignment": "all_partitions"}}},
     "staticMembership needs a consumer group"),
    ({"mode": "sidecar", "staticMembership": True}, "staticMembership needs a consumer group"),
    ({"settings": {"kafka": {"group_instance_id": "pod-0"}}},
     "settings.kafka.group_instance_id would give every replica one id"),
    ({"mode": "sidecar", "networkPolicy": {"enabled": True}},
     "networkPolicy.enabled needs mode: standalone"),
]


@pytest.mark.parametrize(("values", "message"), TEMPLATE_REFUSALS,
                         ids=[m.split()[0] for _, m in TEMPLATE_REFUSALS])
def test_chart_refuses_what_the_schema_cannot(
    helm: ModuleType, chart: Any, values: dict[str, Any], message: str
) -> None:
    with pytest.raises(helm.HelmRenderError, match=re.escape(message)):
        render(chart, values)


def test_values_schema_mirrors_the_settings_model() -> None:
    current = json.loads(values_schema.SCHEMA_FILE.read_text(encoding="utf-8"))
    assert values_schema.render(values_schema.expected_schema(current)) == \
        values_schema.SCHEMA_FILE.read_text(encoding="utf-8"), (
        "values.schema.json is out of date with the driftwatch.settings package: run "
        "`python -m tests.helm.values_schema`")


def test_values_yaml_documents_every_setting() -> None:
    from driftwatch.settings import Settings

    text = (CHART / "values.yaml").read_text(encoding="utf-8")
    settings_block = text[text.index("\nsettings:\n"):text.index("\nsecrets:\n")]
    secret = {key for _, key in values_schema.SECRET_KEYS}
    missing = []
    for section, field in Settings.model_fields.items():
        model = field.annotation
        if typing.get_origin(model) is list:  # a list of sections (comparisons): item keys
            (model,) = typing.get_args(model)
        assert isinstance(model, type)
        if not re.search(rf"^  {section}:", settings_block, re.M):
            missing.append(section)
        for key in model.model_fields:  # type: ignore[attr-defined]
            if key not in secret and not re.search(rf"#? *{key}:", settings_block):
                missing.append(f"{section}.{key}")
    assert missing == [], f"values.yaml does not document: {missing}"


# ------------------------------------------------------------------------------------------
# the image: no public one, so image.repository is required; the documented install


IMAGE_MISSING = ("image.repository is required: driftwatch publishes no image. Build one from "
                 "the repository's Dockerfile and push it to a registry your cluster pulls "
                 "from, then name it: docker build -t REGISTRY/driftwatch-agent:0.2.0 . && "
                 "docker push REGISTRY/driftwatch-agent:0.2.0 && helm install ... --set "
                 "image.repository=REGISTRY/driftwatch-agent")


@pytest.mark.parametrize("scenario", ["standalone-defaults", "sidecar"])
def test_an_install_without_an_image_says_how_to_build_one(
        helm: ModuleType, chart: Any, scenario: str) -> None:
    values = copy.deepcopy(SCENARIOS[scenario])
    chart.validate_schema(copy.deepcopy(values))  # the schema lets it through to the message
    for missing in (values, {**values, "image": {"repository": ""}}):
        with pytest.raises(helm.HelmRenderError) as caught:
            chart.render(copy.deepcopy(missing), name=RELEASE, namespace=NAMESPACE)
        assert IMAGE_MISSING in str(caught.value)
    assert chart.metadata["appVersion"] == "0.2.0"  # the tag the message names


def test_the_model_chart_without_an_image_says_how_to_build_one(
        helm: ModuleType, model_chart: Any) -> None:
    with pytest.raises(helm.HelmRenderError) as caught:
        model_chart.render({"driftwatch": {"image": {"repository": ""}}}, name=RELEASE,
                           namespace=NAMESPACE)
    assert IMAGE_MISSING in str(caught.value)


def test_chart_metadata_names_home_sources_and_maintainers(chart: Any) -> None:
    metadata = chart.metadata
    assert metadata["home"].startswith("https://")
    assert metadata["sources"] and all(url.startswith("https://") for url in metadata["sources"])
    assert metadata["maintainers"] and all(m["name"] for m in metadata["maintainers"])


INSTALL_DOCS = [ROOT / "README.md", CHART / "README.md", ROOT / "docs" / "kubernetes.md"]


def _blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.M | re.S)


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """Helm's merge of values: ``extra`` wins, mappings merge key by key."""
    merged = copy.deepcopy(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


@pytest.mark.parametrize("doc", INSTALL_DOCS, ids=[p.name for p in INSTALL_DOCS])
def test_the_documented_install_runs_as_written(
        helm: ModuleType, chart: Any, kube: ModuleType, doc: Path) -> None:
    """The install block of each doc, as a shell would run it: its variables expanded, the
    image it builds is the image its ``helm install`` runs, and the install's values (its
    ``-f`` file from the same page, then its ``--set`` s, parsed by Helm's own parser) render
    with the real engine into valid objects."""
    import shlex

    text = doc.read_text(encoding="utf-8")
    (block,) = [b for b in _blocks(text, "sh") if "helm install driftwatch ./helm/driftwatch" in b]
    commands = [shlex.split(line, comments=True)
                for line in block.replace("\\\n", " ").splitlines() if line.strip()]
    variables = dict(c[0].split("=", 1) for c in commands if len(c) == 1 and "=" in c[0])
    assert variables, "the block sets the registry it uses"

    def expand(word: str) -> str:
        return re.sub(r"\$(\w+)|\$\{(\w+)\}", lambda m: variables[m[1] or m[2]], word)

    commands = [[expand(word) for word in command] for command in commands]
    (build,) = [c for c in commands if c[:2] == ["docker", "build"]]
    (push,) = [c for c in commands if c[:2] == ["docker", "push"]]
    (install,) = [c for c in commands if c[:2] == ["helm", "install"]]
    built = build[build.index("-t") + 1]
    assert build[-1] == "." and push[-1] == built

    values: dict[str, Any] = {}
    options = iter(install[4:])
    for option in options:
        if option == "-f":
            name = next(options)
            (found,) = [b for b in _blocks(text, "yaml") if b.startswith(f"# {name}\n")]
            values = _merge(values, helm.values_from_yaml(found))
        elif option == "--set":
            values = _merge(values, helm.parse_set_string(next(options)))
        else:
            assert option in ("-n", "--create-namespace") or option == NAMESPACE, option
    objects = parse(chart.render(values, name="driftwatch", namespace=NAMESPACE))
    assert agent_container(one(objects, "Deployment")["spec"]["template"]["spec"])["image"] \
        == built
    validate_all(kube, objects)


# ------------------------------------------------------------------------------------------
# sidecar mode, rendered into a model's chart


@pytest.fixture(scope="module")
def model_chart_dir(helm: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the fixture model chart with its driftwatch dependency resolved by Helm
    itself (``helm dependency update`` from this checkout's chart, packaged into charts/)."""
    directory = tmp_path_factory.mktemp("model") / "model-chart"
    shutil.copytree(MODEL_CHART, directory)
    chart_yaml = directory / "Chart.yaml"
    text = chart_yaml.read_text(encoding="utf-8")
    relative = "file://../../../../helm/driftwatch"
    assert relative in text and (MODEL_CHART / relative.removeprefix("file://")).resolve() == CHART
    chart_yaml.write_text(text.replace(relative, f"file://{CHART}"), encoding="utf-8")
    helm.dependency_update(directory)
    assert [d["status"] for d in helm.dependency_list(directory)] == ["ok"]
    return directory


@pytest.fixture(scope="module")
def model_chart(helm: ModuleType, model_chart_dir: Path) -> Iterator[Any]:
    with helm.Chart.load(model_chart_dir) as loaded:
        yield loaded


def test_model_chart_lints_clean(helm: ModuleType, model_chart_dir: Path) -> None:
    report = helm.lint(model_chart_dir, strict=True, namespace=NAMESPACE,
                       with_subcharts=True, kube_version="v1.30.0")
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


def test_sidecar_renders_into_the_model_pod(
    helm: ModuleType, kube: ModuleType, model_chart: Any, tmp_path: Path
) -> None:
    objects = parse(model_chart.render({}, name=RELEASE, namespace=NAMESPACE))
    # The dependency renders no workload of its own in sidecar mode.
    assert kinds(objects) == ["ConfigMap", "Deployment", "Pod", "Service", "ServiceMonitor"]
    validate_all(kube, objects)
    deployment = one(objects, "Deployment")
    assert deployment["metadata"]["name"] == f"{RELEASE}-fraud-model"
    template = deployment["spec"]["template"]
    pod = template["spec"]
    assert [c["name"] for c in pod["containers"]] == ["model", "driftwatch"]
    agent = agent_container(pod)
    assert agent["ports"] == [{"name": "dw-metrics", "containerPort": 9108, "protocol": "TCP"}]
    assert "readinessProbe" not in agent  # a Kafka outage must not unready the model
    assert agent["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert agent["resources"] == {"requests": {"cpu": "50m", "memory": "96Mi"},
                                  "limits": {"memory": "160Mi"}}
    assert agent["securityContext"]["runAsNonRoot"] is True
    # Every volume the agent mounts is in the Pod, next to the model's own.
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert set(volumes) == {"model-weights", "driftwatch-config", "driftwatch-tmp",
                            "driftwatch-state"}
    assert {m["name"] for m in agent["volumeMounts"]} <= set(volumes)
    configmap = one(objects, "ConfigMap")
    assert volumes["driftwatch-config"]["configMap"]["name"] == configmap["metadata"]["name"]
    # The sidecar Service selects the model's Pods through the label the template adds.
    service = one(objects, "Service")
    assert service["spec"]["selector"] == {"driftwatch.io/sidecar": f"{RELEASE}-driftwatch"}
    assert service["spec"]["selector"].items() <= template["metadata"]["labels"].items()
    monitor = one(objects, "ServiceMonitor")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= \
        service["metadata"]["labels"].items()
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    # The checksum follows the sidecar's settings.
    annotation = template["metadata"]["annotations"]["checksum/driftwatch-config"]
    changed = parse(model_chart.render(
        {"driftwatch": {"settings": {"logging": {"level": "DEBUG"}}}},
        name=RELEASE, namespace=NAMESPACE))
    assert one(changed, "Deployment")["spec"]["template"]["metadata"]["annotations"][
        "checksum/driftwatch-config"] != annotation
    # The settings the sidecar reads pass the agent's validation.
    result = config_validate(tmp_path, configmap["data"]["driftwatch.yaml"],
                             container_env(agent))
    assert result.returncode == 0, result.stdout + result.stderr
    settings = yaml.safe_load(configmap["data"]["driftwatch.yaml"])
    assert settings["events"] == {"model_source": "constant", "model_constant": "fraud-v2"}
    # Every replica reads the whole stream (sidecar.wholeStream, the default).
    assert settings["kafka"]["assignment"] == "all_partitions"


def test_replicated_sidecars_each_read_the_whole_stream(
    kube: ModuleType, model_chart: Any, tmp_path: Path
) -> None:
    """Three model replicas on a topic that two models share: each sidecar assigns itself
    every partition and monitors only its model; an explicit assignment wins over the
    chart's default, and wholeStream: false leaves the replicas in one group."""
    shared = {"kafka": {"topics": ["scores"]},
              "events": {"model_source": "key", "only_models": ["fraud-v2"]}}
    objects = parse(model_chart.render(
        {"replicaCount": 3, "driftwatch": {"settings": shared}},
        name=RELEASE, namespace=NAMESPACE))
    validate_all(kube, objects)
    assert one(objects, "Deployment")["spec"]["replicas"] == 3
    configmap = one(objects, "ConfigMap")
    settings = yaml.safe_load(configmap["data"]["driftwatch.yaml"])
    assert settings["kafka"]["assignment"] == "all_partitions"
    assert settings["events"]["only_models"] == ["fraud-v2"]
    agent = agent_container(one(objects, "Deployment")["spec"]["template"]["spec"])
    result = config_validate(tmp_path, configmap["data"]["driftwatch.yaml"],
                             container_env(agent))
    assert result.returncode == 0, result.stdout + result.stderr

    def assignment(values: dict[str, Any]) -> Any:
        rendered = parse(model_chart.render({"driftwatch": values}, name=RELEASE,
                                            namespace=NAMESPACE))
        text = one(rendered, "ConfigMap")["data"]["driftwatch.yaml"]
        return yaml.safe_load(text)["kafka"].get("assignment")

    assert assignment({"sidecar": {"wholeStream": False}}) is None
    assert assignment({"settings": {"kafka": {"assignment": "group"}}}) == "group"


def test_sidecar_with_a_persistent_checkpoint(kube: ModuleType, model_chart: Any) -> None:
    objects = parse(model_chart.render({"driftwatch": {"persistence": {"enabled": True}}},
                                       name=RELEASE, namespace=NAMESPACE))
    validate_all(kube, objects)
    claim = one(objects, "PersistentVolumeClaim")
    volumes = {v["name"]: v for v in one(objects, "Deployment")["spec"]["template"]["spec"]
               ["volumes"]}
    assert volumes["driftwatch-state"]["persistentVolumeClaim"] == {
        "claimName": claim["metadata"]["name"]}


def test_sidecar_templates_need_sidecar_mode(helm: ModuleType, model_chart: Any) -> None:
    with pytest.raises(helm.HelmRenderError, match=re.escape("set driftwatch.mode: sidecar")):
        model_chart.render({"driftwatch": {"mode": "standalone"}}, name=RELEASE,
                           namespace=NAMESPACE)


def test_sidecar_pod_monitor_scrapes_the_model_pods(kube: ModuleType, model_chart: Any) -> None:
    objects = parse(model_chart.render(
        {"driftwatch": {"serviceMonitor": {"enabled": False}, "podMonitor": {"enabled": True}}},
        name=RELEASE, namespace=NAMESPACE))
    validate_all(kube, objects)
    assert "ServiceMonitor" not in kinds(objects)
    monitor = one(objects, "PodMonitor")
    template = one(objects, "Deployment")["spec"]["template"]
    assert monitor["spec"]["selector"]["matchLabels"] == {
        "driftwatch.io/sidecar": f"{RELEASE}-driftwatch"}
    assert monitor["spec"]["selector"]["matchLabels"].items() <= \
        template["metadata"]["labels"].items()
    assert monitor["spec"]["podMetricsEndpoints"][0]["port"] in {
        p["name"] for p in agent_container(template["spec"])["ports"]}


def notes(chart: Any, values: Mapping[str, Any]) -> str:
    """What ``helm install`` prints after installing with ``values``."""
    rendered = chart.render(with_image(values), name=RELEASE, namespace=NAMESPACE)
    return next(text for path, text in rendered.items() if path.endswith("NOTES.txt"))


def join_memory_mib(models: int = 100, window: int = 1000, pending: int = 250,
                    labels: int = 10_000, remember: int = 100_000,
                    signals_mib: float = 1.2) -> int:
    """The chart's formula (values.yaml, above resources; benchmarks/join_memory.py)."""
    return math.ceil(60 + 0.42 * window * models / 1024
                     + (640 * pending * models + 500 * labels + 140 * remember) / 2**20
                     + signals_mib * models)


JOINED = {"settings": {"kafka": {"bootstrap_servers": ["kafka:9092"],
                                 "topics": ["predictions", "labels"]},
                       "join": {"enabled": True, "predictions_topic": "predictions",
                                "labels_topic": "labels"}}}


def test_install_notes_size_the_join_from_its_bounds(chart: Any) -> None:
    # The defaults' bounds (100 models x 250 pending predictions, 10 000 labels) fit the
    # default limit (docs/fleet.md derives them): the total, no warning.
    text = notes(chart, JOINED)
    need = join_memory_mib()
    assert need == 255
    assert f"may need up to {need} MiB" in text
    assert "WARNING" not in text
    # Bounds beyond the limit: the notes say so, with the keys to change.
    wide = copy.deepcopy(JOINED)
    wide["settings"]["join"]["max_pending"] = 100_000
    text = notes(chart, wide)
    need = join_memory_mib(pending=100_000)
    assert "WARNING: the memory limit (256Mi) is below that" in text
    assert f"Raise resources.limits.memory to {need}Mi" in text
    # Bounds sized for the traffic, and a limit that covers them: the total, no warning.
    sized = copy.deepcopy(JOINED)
    sized["settings"]["join"].update(
        max_pending=20_000, max_pending_labels=5000, remember=20_000,
        score_drift={"reference": "previous"})
    sized["settings"]["limits"] = {"max_models": 10}
    sized["settings"]["monitoring"] = {"defaults": {"window_size": 5000}}
    need = join_memory_mib(models=10, window=5000, pending=20_000, labels=5000,
                           remember=20_000, signals_mib=2.8)
    for limit, warned in (("1Gi", False), (f"{need}Mi", False), (f"{need - 1}Mi", True),
                          (f"{need * 2**20}", False), ("0.1G", True)):
        values = {**sized, "resources": {"limits": {"memory": limit}}}
        text = notes(chart, values)
        assert f"may need up to {need} MiB" in text, limit
        assert ("WARNING: the memory limit" in text) == warned, limit
    # Label-free signals off: their share goes; no join: no memory note at all.
    off = copy.deepcopy(JOINED)
    off["settings"]["join"]["score_drift"] = {"enabled": False}
    assert f"may need up to {join_memory_mib(signals_mib=0)} MiB" in notes(chart, off)
    assert "Memory:" not in notes(chart, SCALED)
    # Sidecar mode: the sidecar's resources are the ones compared, and a constant model id
    # makes one model whatever limits.max_models says.
    sidecar = copy.deepcopy(SIDECAR)
    sidecar["settings"]["join"] = {"enabled": True, "kind_field": "kind", "max_pending": 500_000}
    text = notes(chart, sidecar)
    assert f"may need up to {join_memory_mib(models=1, pending=500_000)} MiB" in text
    assert "WARNING: the memory limit (160Mi) is below that" in text
    assert "Raise sidecar.resources.limits.memory" in text


def test_readme_values_table_is_current() -> None:
    from tests.helm import values_readme

    current = values_readme.README.read_text(encoding="utf-8")
    assert values_readme.readme(current) == current, (
        "helm/driftwatch/README.md's values table is out of date with values.yaml: run "
        "`python -m tests.helm.values_readme`")
    # Every value of the chart is a row: the table is the chart's whole interface.
    table = current.partition(values_readme.MARKER)[2]
    for path in ("networkPolicy.kafka.ports", "podMonitor.enabled", "prometheusRule.alerts",
                 "prometheusRule.grafanaUrl", "settings.kafka.bootstrap_servers"):
        assert f"| `{path}` |" in table, path


def test_values_readme_reads_helm_docs_comments() -> None:
    from tests.helm import values_readme

    text = (
        "# -------\n"
        "# -- Top-level value,\n"
        "# continued.\n"
        "top: 1\n"
        "group:\n"
        "  # a plain comment, not a description\n"
        "  plain: x\n"
        "  # -- A documented mapping is one value.\n"
        "  whole: {a: 1}\n"
        "\n"
        "  # -- Ends at the blank line\n"
        "\n"
        "  after: true\n"
    )
    assert values_readme.descriptions(text) == {
        "top": "Top-level value, continued.", "group.whole": "A documented mapping is one value."}


def test_readme_alert_example_renders(chart: Any, draft7: Any, tmp_path: Path) -> None:
    text = (CHART / "README.md").read_text(encoding="utf-8")
    (example,) = [block for block in re.findall(r"```yaml\n(.*?)```", text, re.S)
                  if "prometheusRule:" in block]
    values = yaml.safe_load(example)
    draft7.validate(chart.merge_values(copy.deepcopy(values)))
    objects = render(chart, values)
    rules = _rules(objects)
    assert "DriftwatchConsumerLagGrowing" not in rules
    assert rules["DriftwatchNoEvents"]["labels"] == {"severity": "critical", "team": "fraud",
                                                     "env": "prod"}
    result = config_validate(tmp_path, settings_text(objects), {})
    assert result.returncode == 0, result.stdout + result.stderr
def test_helm_test_pod_checks_the_tls_files_it_mounts(chart: Any) -> None:
    """`helm test` opens the TLS files as the agent would: the chart's TLS Secrets are
    mounted where the settings point; only with extraVolumes (not mountable here) is the
    file check skipped."""
    objects = render(chart, EVERYTHING)
    pod = objects[("Pod", f"{RELEASE}-driftwatch-test-settings")]["spec"]
    container = pod["containers"][0]
    assert container["args"] == ["config", "validate", "/etc/driftwatch/driftwatch.yaml"]
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    settings = yaml.safe_load(settings_text(objects))
    for path in (settings["kafka"]["ssl_cafile"], settings["metrics"]["tls_certfile"],
                 settings["metrics"]["tls_keyfile"]):
        assert mounts[str(Path(path).parent)] in {v["name"] for v in pod["volumes"]}
    deployment_volumes = {v["name"]: v for v in
                          one(objects, "Deployment")["spec"]["template"]["spec"]["volumes"]}
    for volume in pod["volumes"]:
        if volume["name"].endswith("-tls"):
            assert volume == deployment_volumes[volume["name"]]
    extra = render(chart, {**EVERYTHING, "extraVolumes": [{"name": "x", "emptyDir": {}}],
                           "extraVolumeMounts": [{"name": "x", "mountPath": "/x"}]})
    args = extra[("Pod", f"{RELEASE}-driftwatch-test-settings")]["spec"]["containers"][0]["args"]
    assert args == ["config", "validate", "--no-file-checks", "/etc/driftwatch/driftwatch.yaml"]

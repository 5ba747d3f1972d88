"""Anonymising a trace: names and label values become salted hashes, the scheduling-relevant shape stays.

What a captured trace may reveal is who runs what: pod, node, namespace, group and priority-class names
and label values. Each becomes the first 16 hex digits of a keyed BLAKE2b hash of it under the salt:
the same text gives the same hash everywhere in a trace, so a node selector still matches its node's
label, ``kubernetes.io/hostname`` still equals the node's name and a gang's pods still share a group;
without the salt the hashes cannot be reversed by hashing guesses. BLAKE2b's own ``salt`` parameter
takes at most 16 bytes, so the salt (any length) is hashed into a 64-byte key instead.

Kept verbatim: label, taint and toleration *keys* (they say what kind of constraint it is, and are
public vocabulary), and the values of well-known keys: ``kubernetes.io/*``, ``*.kubernetes.io/*``
(e.g. ``node.kubernetes.io/instance-type``, ``topology.kubernetes.io/zone``), ``nvidia.com/*`` (GPU
feature discovery, e.g. ``nvidia.com/gpu.product``) and ``kwokbench.io/*``, except the few of those
keys whose value is an object's name (``kubernetes.io/hostname``, ``statefulset.kubernetes.io/pod-name``,
...), which are hashed like the name, and the recommended application labels ``app.kubernetes.io/*``
(``name``, ``instance``, ``part-of``, ...), whose values are the user's own names. Also kept: resources,
times, GPU models, owner kinds, the ``default`` namespace and the built-in ``system-*-critical`` priority
classes.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from collections.abc import Mapping
from typing import Any, TypeVar

from kwokbench.errors import ScenarioError
from kwokbench.trace.format import Trace, TraceNode, TracePod

KEPT_DOMAINS = ("kubernetes.io", "nvidia.com", "kwokbench.io")
"""Label-key prefixes whose values are kept; subdomains of kubernetes.io too."""
HASHED_DOMAINS = ("app.kubernetes.io",)
"""Subdomains of kubernetes.io whose values are names the user chose (an application's name, instance, ...)."""
NAME_KEYS = frozenset({
    "kubernetes.io/hostname", "kubernetes.io/metadata.name", "statefulset.kubernetes.io/pod-name",
    "batch.kubernetes.io/job-name", "batch.kubernetes.io/controller-uid",
})
"""Well-known keys whose value names an object: hashed, consistently with that object's name."""
KEPT_NAMESPACES = frozenset({"default"})
KEPT_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})
HASH_BYTES = 8
"""16 hex digits: a collision among a million names has a chance of about 3e-8."""

M = TypeVar("M", bound=Mapping[str, Any])


def keep_value(key: str) -> bool:
    """Whether a label (taint, toleration) with this key keeps its value verbatim."""
    prefix, _, _ = key.rpartition("/")
    return key not in NAME_KEYS and prefix not in HASHED_DOMAINS \
        and (prefix in KEPT_DOMAINS or prefix.endswith(".kubernetes.io"))


@dataclasses.dataclass(frozen=True)
class Anonymiser:
    """Pseudonyms under one salt; keep the salt secret, and reuse it to anonymise related traces alike."""

    salt: str

    def __post_init__(self) -> None:
        if not self.salt:
            raise ScenarioError("anonymise: an empty salt would let anyone recompute the hashes; give a secret one")

    @functools.cached_property
    def _key(self) -> bytes:
        return hashlib.blake2b(self.salt.encode()).digest()

    def hash(self, value: str) -> str:
        """The stable pseudonym of a name or value; the empty string stays empty (it names nothing)."""
        return hashlib.blake2b(value.encode(), key=self._key, digest_size=HASH_BYTES).hexdigest() if value else ""

    def labels(self, labels: Mapping[str, str]) -> dict[str, str]:
        return {k: v if keep_value(k) else self.hash(v) for k, v in labels.items()}

    def _constraints(self, items: tuple[M, ...]) -> tuple[dict[str, Any], ...]:
        """Taints and tolerations: the value hashed under the same rule as a label's."""
        return tuple({**t, "value": self.hash(t["value"])} if "value" in t and not keep_value(t.get("key", ""))
                     else dict(t) for t in items)

    def pod(self, p: TracePod) -> TracePod:
        return dataclasses.replace(
            p, name=self.hash(p.name),
            namespace=p.namespace if p.namespace in KEPT_NAMESPACES else self.hash(p.namespace),
            priority_class=None if p.priority_class is None else
            p.priority_class if p.priority_class in KEPT_PRIORITY_CLASSES else self.hash(p.priority_class),
            labels=self.labels(p.labels), node_selector=self.labels(p.node_selector),
            tolerations=self._constraints(p.tolerations),
            group=None if p.group is None else self.hash(p.group))

    def node(self, n: TraceNode) -> TraceNode:
        return dataclasses.replace(n, name=self.hash(n.name), labels=self.labels(n.labels),
                                   taints=self._constraints(n.taints))

    def trace(self, t: Trace) -> Trace:
        return Trace(tuple(self.pod(p) for p in t.pods), tuple(self.node(n) for n in t.nodes), t.source, t.format)


def anonymise(trace: Trace, salt: str) -> Trace:
    """The trace with every name and non-kept label value replaced by its salted hash."""
    return Anonymiser(salt).trace(trace)

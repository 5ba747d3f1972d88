"""Provisioning of every binary a kwokctl cluster needs, pinned in :mod:`.versions`."""

from kwokbench.toolchain.install import Binary, Component, Toolchain, components, go_version

__all__ = ["Binary", "Component", "Toolchain", "components", "go_version"]

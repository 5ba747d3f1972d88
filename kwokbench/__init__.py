"""kwokbench: scheduler scalability harness for Kubernetes on KWOK clusters."""

__version__ = "0.1.0"

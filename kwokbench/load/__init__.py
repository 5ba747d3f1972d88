"""Load generation: arrival schedules (pure), the open-loop submitter, and the pod-timeline watcher."""

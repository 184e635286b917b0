"""The cpuinfer.llm test lab: Debian VMs built and booted by the project itself."""

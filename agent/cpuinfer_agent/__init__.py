"""cpuinfer-agent: the programs cpuinfer.llm runs on inference hosts, one package in one venv.

Built into a wheel on the controller by the collection's ``cpuinfer.llm.host_agent_wheel`` lookup, with
the kernel-interface helpers it imports from the collection's ``plugins/module_utils`` (under their
collection path, so the same files serve the modules and the agent), and installed offline on each host
by the ``cpuinfer.llm.host_agent`` role with its one dependency, prometheus_client (exposition), whose wheel
ships beside the agent's: a host needs nothing but python3-venv.
"""

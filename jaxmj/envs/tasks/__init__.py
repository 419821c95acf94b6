"""The registered tasks (jaxmj.envs.names() lists them)."""

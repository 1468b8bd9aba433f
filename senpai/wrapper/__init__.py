"""The wrapper: plain code, no LLM. Observe the forge, derive events, decide, dispatch and reap jobs."""

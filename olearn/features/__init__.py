"""Feature expansions applied per example inside the learner kernel."""

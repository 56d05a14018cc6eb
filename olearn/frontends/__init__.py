"""The ways in: the command line, one command-line run, the Python Learner."""

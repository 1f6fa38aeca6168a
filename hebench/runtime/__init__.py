"""Runs suites: the runner and the runtimes that start a configuration's parties."""

"""Typer command-line interface: thin modules that parse, call the library, render."""

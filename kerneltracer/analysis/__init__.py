"""Analyses: read traces and logs, never mutate their inputs, write reports."""

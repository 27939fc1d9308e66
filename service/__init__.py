"""Atoll as a service: the released harness behind an OpenAI-compatible endpoint, live records and
feedback, and the release chain that decides what is served."""

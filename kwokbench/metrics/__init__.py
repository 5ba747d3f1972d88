"""Scraping and parsing of the components' Prometheus ``/metrics`` endpoints."""

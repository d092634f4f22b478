"""Imports: a snapshot's pages made knowledge documents."""

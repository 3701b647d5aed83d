"""Librarian: multi-tenant document RAG. userId is the actor; organizationId is the library.

This package holds the provider seams (files, parsing, embeddings, index, checkpoints) and must not
import `graphs`, `tools` or `server`: dependencies point one way.
"""

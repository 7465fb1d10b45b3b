"""Ideation: `silva ideate TOPIC_FILE` grows an archive of research ideas (ideas.jsonl, one
record per idea, each also written as a Silva idea file): LLM mutation of the archive with
reflection rounds, duplicates removed by embedding similarity (the gateway's, else TF-IDF),
novelty checked against the literature through the writer's client (writeup.literature). Every
idea is saved as soon as it is made."""

"""`librarian eval`: judged data in, quality figures out (pure parts; the runners are in `evals/`).

`metrics` scores rankings and answers, `data` reads BEIR folders and QA files, `report` renders a
table, JSON or a self-contained HTML page. Nothing here imports `graphs` or `tools`.
"""

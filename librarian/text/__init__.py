"""Plain-text helpers shared by retrieval and answers; they import nothing else of the project."""

"""Generation: the article pipeline (retrieve, outline, write, optimize, score) and its runs."""

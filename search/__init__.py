"""What to grow next and how: stage manager, template proposers, operators, policies."""

AGENTS: list = []

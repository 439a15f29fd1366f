"""Which case is switched on. Each agent reads each of its switches at exactly one place."""

ACTIVE = None


def use(switch):
    global ACTIVE
    ACTIVE = switch


def on(switch):
    return ACTIVE == switch

BUNDLES = []


def bundle(name, root=None):
    """Registers a bundle generator. root: the directory the bundle is written under (default:
    samples/); the dashboard's own bundles go to tests/dashboard/bundles/."""
    def deco(fn):
        BUNDLES.append((name, fn, root))
        return fn
    return deco

BUNDLES = []


def bundle(name):
    def deco(fn):
        BUNDLES.append((name, fn))
        return fn
    return deco

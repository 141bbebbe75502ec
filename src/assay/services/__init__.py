"""The three Assay services. Each has the same module names: ``model`` (frozen domain
dataclasses), pure rule modules, ``convert`` (proto <-> domain), ``servicer`` (the gRPC
adapter) and ``service`` (builds the runtime ``ServiceSpec``)."""

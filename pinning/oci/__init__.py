"""OCI: the one image-reference grammar, the registry client and the image documents
(config, manifest) pin writes and reads.
"""

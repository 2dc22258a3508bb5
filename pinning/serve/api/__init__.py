"""pin serve's JSON API under ``/api/v1``: locks and assignments (:mod:`.locks`), host
reports and the fleet (:mod:`.hosts`), acceptance results, audits and cost verdicts
(:mod:`.artefacts`); the error shape (:mod:`pinning.serve.errors`), bodies (:mod:`.body`), response
models (:mod:`.models`) and the shared service state (:mod:`.context`).
"""

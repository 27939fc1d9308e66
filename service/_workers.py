"""`run_service(workers=N)`: the service answered by several processes on one port, over one runs store.

uvicorn's supervisor binds the port, starts the worker processes (spawned: each imports Atoll afresh) and
starts again one that dies. Its configuration is what travels to them, pickled, so it carries the options
`create_service_app` takes, and each worker builds its own app from them (`_WorkersConfig.load_app`): its
own connection to the store, its own record journal and writer (service/_pending.py), its own jobs.
"""

from __future__ import annotations

import functools
from typing import Any

import uvicorn
from fastapi import FastAPI
from uvicorn.supervisors import Multiprocess

from atoll.evals import RunStore
from atoll.worlds.serve import guarded_protocol

# uvicorn's supervisor kills a worker that has not answered its health check in this long, and one that has
# not started answering yet counts: a spawned worker imports Atoll first (seconds on a loaded machine), so
# uvicorn's 5 s killed and restarted every worker, for ever, under load.
WORKER_HEALTHCHECK_S = 60


def serve_workers(options: dict[str, Any], *, workers: int, max_waiting: int, **served: Any) -> None:
    """Serve `create_service_app(**options)` from `workers` processes until interrupted; `options["store"]`
    is the runs store's path (None: the default), `served` uvicorn's settings (host, port, limits)."""
    config = _WorkersConfig(
        options, max_waiting, workers=workers, timeout_worker_healthcheck=WORKER_HEALTHCHECK_S, **served
    )
    Multiprocess(config, sockets=[config.bind_socket()]).run()


def _worker_app(options: dict[str, Any]) -> FastAPI:
    """The app one worker serves, over a connection of its own to the runs store."""
    from ._app import create_service_app

    store = options["store"]
    return create_service_app(**{**options, "store": RunStore(store) if store is not None else None})


class _WorkersConfig(uvicorn.Config):
    """uvicorn's configuration, pickled to each worker, which builds its app from `options` and its own
    guarded HTTP protocol (a class made at run time does not pickle)."""

    def __init__(self, options: dict[str, Any], max_waiting: int, **served: Any) -> None:
        # uvicorn's supervisor wants the app as an import string; `load_app` builds it instead.
        super().__init__("service:create_service_app", factory=True, **served)
        self.options, self.max_waiting = options, max_waiting

    def load(self) -> None:
        self.http = guarded_protocol(max_waiting=self.max_waiting)
        super().load()

    def load_app(self) -> Any:
        return functools.partial(_worker_app, self.options)

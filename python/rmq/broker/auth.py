"""The bearer-token check: a server interceptor, so a request without the token is refused
before any servicer (and so any store) sees it."""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import grpc

TOKEN_METADATA_KEY = "authorization"
# Left open so that load balancers and orchestrators can probe a token-protected broker.
UNPROTECTED_PREFIXES = ("/grpc.health.v1.Health/",)


def bearer(token: str) -> tuple[str, str]:
    """The metadata entry a client sends."""
    return (TOKEN_METADATA_KEY, f"Bearer {token}")


if TYPE_CHECKING:
    _Interceptor = grpc.ServerInterceptor[Any, Any]
else:  # grpc's classes are not generic at run time
    _Interceptor = grpc.ServerInterceptor


class TokenInterceptor(_Interceptor):
    def __init__(self, token: str) -> None:
        if not token:
            raise ValueError("the token is empty")
        self._expected = f"Bearer {token}".encode()

    def _allowed(self, details: grpc.HandlerCallDetails) -> bool:
        if details.method.startswith(UNPROTECTED_PREFIXES):
            return True
        for key, value in details.invocation_metadata or ():
            if key == TOKEN_METADATA_KEY:
                given = value.encode() if isinstance(value, str) else bytes(value)
                return hmac.compare_digest(given, self._expected)
        return False

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler[Any, Any] | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = continuation(handler_call_details)
        if handler is None or self._allowed(handler_call_details):
            return handler
        return _refusal(handler)


def _refuse(request: Any, context: grpc.ServicerContext) -> Any:
    context.abort(
        grpc.StatusCode.UNAUTHENTICATED,
        "missing or wrong token: send metadata 'authorization: Bearer <token>'",
    )


def _refusal(handler: grpc.RpcMethodHandler[Any, Any]) -> grpc.RpcMethodHandler[Any, Any]:
    if handler.request_streaming and handler.response_streaming:
        return grpc.stream_stream_rpc_method_handler(_refuse)
    if handler.request_streaming:
        return grpc.stream_unary_rpc_method_handler(_refuse)
    if handler.response_streaming:
        return grpc.unary_stream_rpc_method_handler(_refuse)
    return grpc.unary_unary_rpc_method_handler(_refuse)

"""The gRPC tests' Python client (grpcio): the calls of h2app's grpc-client
on one channel, from a thread pool. Prints its pid, waits for a line on
stdin, checks every answer; exits non-zero on any mismatch.

    grpc_client.py ADDR N [CA_FILE]   (CA_FILE: over TLS, trusting it)"""
import os
import sys
from concurrent.futures import ThreadPoolExecutor

import grpc


def enc(s):  # google.protobuf.StringValue: field 1, a string under 128 bytes
    b = s.encode()
    return b"\x0a" + bytes([len(b)]) + b


def dec(b):
    if not b:
        return ""
    assert b[0] == 0x0A and b[1] == len(b) - 2, b
    return b[2:].decode()


def main():
    addr, n = sys.argv[1], int(sys.argv[2])
    print(os.getpid(), flush=True)
    sys.stdin.readline()
    if len(sys.argv) > 3:
        with open(sys.argv[3], "rb") as f:
            ch = grpc.secure_channel(addr, grpc.ssl_channel_credentials(root_certificates=f.read()))
    else:
        ch = grpc.insecure_channel(addr)
    with ch:
        get = ch.unary_unary("/weft.test.Store/Get", request_serializer=enc, response_deserializer=dec)
        lst = ch.unary_stream("/weft.test.Store/List", request_serializer=enc, response_deserializer=dec)

        def call(i):
            key = "k%d" % i
            got = get(key, timeout=30)
            assert got == "value-of-" + key, got
            try:
                get("missing" + key, timeout=30)
                raise AssertionError("missing%s answered" % key)
            except grpc.RpcError as e:
                assert e.code() == grpc.StatusCode.NOT_FOUND, e
            got = list(lst(key, timeout=30))
            assert got == ["%s-%d" % (key, k) for k in range(3)], got

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(call, range(n)))
    print("ok", flush=True)


main()

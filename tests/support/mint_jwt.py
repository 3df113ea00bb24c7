#!/usr/bin/python3
"""Mints JWTs with PyJWT (python3-jwt) and python3-cryptography for the verifier's tests: for
each algorithm a fresh key pair (or secret) and a token, plus tokens that must be refused.
Prints one JSON object per line:
  {"alg": ..., "kid": ..., "public_pem": ..., "jwk": {...}, "secret": b64url, "token": ...}
and then, with "case" set instead of "alg", the tokens of the refusal cases, each naming the
key ("key_alg") it is checked against.
Claims: iss "https://idp.test/", aud "api", sub "alice", exp NOW+3600, nbf NOW-10, where NOW is
the first argument (seconds since the epoch)."""
import base64
import json
import sys

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

now = int(sys.argv[1])
claims = {"iss": "https://idp.test/", "aud": "api", "sub": "alice", "exp": now + 3600,
          "nbf": now - 10, "org": {"id": "acme"}, "plan": "pro"}


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def public_pem(private):
    return private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def public_jwk(alg, private):
    algorithm = jwt.get_algorithm_by_name(alg)
    return json.loads(algorithm.to_jwk(private.public_key()))


keys = {}
for alg in ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512"]:
    keys[alg] = rsa.generate_private_key(public_exponent=65537, key_size=2048)
keys["ES256"] = ec.generate_private_key(ec.SECP256R1())
keys["ES384"] = ec.generate_private_key(ec.SECP384R1())
keys["ES512"] = ec.generate_private_key(ec.SECP521R1())
keys["EdDSA"] = ed25519.Ed25519PrivateKey.generate()

for alg, private in keys.items():
    kid = "key-" + alg.lower()
    jwk = public_jwk(alg, private)
    jwk["kid"] = kid
    token = jwt.encode(claims, private, algorithm=alg, headers={"kid": kid})
    print(json.dumps({"alg": alg, "kid": kid, "public_pem": public_pem(private), "jwk": jwk,
                      "token": token}))

for alg, size in [("HS256", 32), ("HS384", 48), ("HS512", 64)]:
    secret = bytes(range(size))
    kid = "key-" + alg.lower()
    token = jwt.encode(claims, secret, algorithm=alg, headers={"kid": kid})
    jwk = {"kty": "oct", "k": b64url(secret), "kid": kid}
    print(json.dumps({"alg": alg, "kid": kid, "secret": b64url(secret), "jwk": jwk,
                      "token": token}))

rs256 = keys["RS256"]
es256 = keys["ES256"]


def case(name, key_alg, token):
    print(json.dumps({"case": name, "key_alg": key_alg, "token": token}))


def with_claims(**changes):
    changed = dict(claims)
    for key, value in changes.items():
        if value is None:
            changed.pop(key, None)
        else:
            changed[key] = value
    return changed


# Another caller of the same issuer, with a claim named as identity providers namespace theirs.
case("bob", "ES256", jwt.encode(with_claims(sub="bob", org={"id": "globex"}, plan="free",
                                            **{"https://sluice.test/tier": "gold"}),
                                es256, algorithm="ES256"))
# The first caller again, in a token of its own: a limit keyed on claims counts both as one.
case("alice_again", "ES256", jwt.encode(with_claims(jti="second"), es256, algorithm="ES256"))
case("expired", "ES256", jwt.encode(with_claims(exp=now - 120), es256, algorithm="ES256"))
case("not_yet_valid", "ES256", jwt.encode(with_claims(nbf=now + 120), es256, algorithm="ES256"))
case("no_exp", "ES256", jwt.encode(with_claims(exp=None), es256, algorithm="ES256"))
case("issuer", "ES256", jwt.encode(with_claims(iss="https://evil.test/"), es256,
                                   algorithm="ES256"))
case("audience", "ES256", jwt.encode(with_claims(aud="other"), es256, algorithm="ES256"))
case("audience_array", "ES256", jwt.encode(with_claims(aud=["other", "api"]), es256,
                                           algorithm="ES256"))
case("unknown_kid", "ES256", jwt.encode(claims, es256, algorithm="ES256",
                                        headers={"kid": "../../etc/passwd"}))
case("crit", "ES256", jwt.encode(claims, es256, algorithm="ES256",
                                 headers={"crit": ["exp"]}))
case("jku", "ES256", jwt.encode(claims, es256, algorithm="ES256",
                                headers={"jku": "https://evil.test/jwks.json"}))
case("embedded_jwk", "ES256", jwt.encode(claims, es256, algorithm="ES256",
                                         headers={"jwk": public_jwk("ES256", es256)}))
# `none`, which PyJWT writes with an empty signature.
case("none", "ES256", jwt.encode(claims, None, algorithm="none"))
# RSA/HMAC confusion: HS256 keyed with the RSA public key's PEM text (PyJWT refuses to do it, so
# it is signed by hand).
import hashlib
import hmac
header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
payload = b64url(json.dumps(claims).encode())
mac = hmac.new(public_pem(rs256).encode(), (header + "." + payload).encode(), hashlib.sha256)
case("key_confusion", "RS256", header + "." + payload + "." + b64url(mac.digest()))
# An ES256 token whose signature is DER, as some signers wrongly send it.
from cryptography.hazmat.primitives import hashes
signing_input = jwt.encode(claims, es256, algorithm="ES256").rsplit(".", 1)[0]
der = es256.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256()))
case("ecdsa_der", "ES256", signing_input + "." + b64url(der))
# r = s = 0 (CVE-2022-21449, "psychic signatures").
case("ecdsa_zero", "ES256", signing_input + "." + b64url(bytes(64)))

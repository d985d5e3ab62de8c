"""The slice of pygpgme's API that bmaptool 3.6 (Debian bookworm) calls,
over python3-gpg, GPGME's own binding: pygpgme is no longer packaged, and
without it bmaptool cannot check a signature at all. Only for the tests,
which run `bmaptool copy` as the oracle of signed-bmap outcomes
(PYTHONPATH=tests/e2e/gpgme_shim)."""
import gpg
import gpg.errors


class GpgmeError(Exception):
    def __getitem__(self, i):
        return self.args[i]


class _Signature:
    def __init__(self, s):
        self.fpr = s.fpr
        # pygpgme: None when good, else (source, code, message)
        self.status = None if s.status == 0 else (0, s.status, gpg.errors.GPGMEError(s.status).getstring())


class _Uid:
    def __init__(self, uid):
        self.name, self.email = uid.name, uid.email


class _Key:
    def __init__(self, key):
        self.uids = [_Uid(u) for u in key.uids]


class Context:
    def __init__(self):
        self._c = gpg.Context()

    def verify(self, signature, signed_data, plaintext):
        try:
            if signed_data is None:
                data, result = self._c.verify(signature.read())
                plaintext.write(data)
            else:
                _, result = self._c.verify(signed_data.read(), signature=signature.read())
        except gpg.errors.BadSignatures as e:
            result = e.result
        except gpg.errors.GPGMEError as e:
            raise GpgmeError(0, 0, str(e))
        return [_Signature(s) for s in result.signatures]

    def get_key(self, fpr):
        return _Key(self._c.get_key(fpr))

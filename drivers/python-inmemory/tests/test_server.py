"""Tests of the endpoint rules in machina_inmemory.server (docs/driver-api.md §2)."""

import os
import shutil
import socket
import stat
import tempfile
import unittest

from machina_inmemory.server import EndpointError, IdentityServicer, parse_endpoint, prepare_socket_path


class ParseEndpointTest(unittest.TestCase):
    def test_accepted_forms(self) -> None:
        self.assertEqual(parse_endpoint("unix:///run/machina/d.sock"), ("unix", "/run/machina/d.sock"))
        self.assertEqual(parse_endpoint("/run/d.sock"), ("unix", "/run/d.sock"))
        self.assertEqual(parse_endpoint("tcp://127.0.0.1:7654"), ("tcp", "127.0.0.1:7654"))

    def test_refused_forms_name_the_value(self) -> None:
        for value in ("unix://relative.sock", "http://x:1", "tcp://nohost", "tcp://:80", "d.sock", ""):
            with self.subTest(value):
                with self.assertRaises(EndpointError) as caught:
                    parse_endpoint(value)
                self.assertIn(repr(value), str(caught.exception))


class IdentityTest(unittest.TestCase):
    def test_plugin_info_lists_the_providers(self) -> None:
        info = IdentityServicer().GetPluginInfo(None, None)
        self.assertEqual(list(info.providers), ["python-inmemory"])


class PrepareSocketPathTest(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="m")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.path = os.path.join(self.dir, "d.sock")

    def _bind(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(self.path)
        return sock

    def test_stale_socket_is_removed(self) -> None:
        self._bind().close()  # bound, never listened on: nobody accepts
        self.assertTrue(stat.S_ISSOCK(os.lstat(self.path).st_mode))
        prepare_socket_path(self.path)
        self.assertFalse(os.path.exists(self.path))

    def test_live_socket_is_refused_and_kept(self) -> None:
        live = self._bind()
        live.listen(1)
        try:
            with self.assertRaisesRegex(EndpointError, "served by another process"):
                prepare_socket_path(self.path)
            self.assertTrue(os.path.exists(self.path))
        finally:
            live.close()

    def test_other_file_is_refused_and_kept(self) -> None:
        with open(self.path, "w") as f:
            f.write("keep me")
        with self.assertRaisesRegex(EndpointError, "not a socket"):
            prepare_socket_path(self.path)
        with open(self.path) as f:
            self.assertEqual(f.read(), "keep me")

    def test_missing_parents_are_created_owner_and_group_only(self) -> None:
        path = os.path.join(self.dir, "a", "b", "d.sock")
        prepare_socket_path(path)
        for directory in (os.path.join(self.dir, "a"), os.path.join(self.dir, "a", "b")):
            self.assertEqual(stat.S_IMODE(os.stat(directory).st_mode) & 0o007, 0, directory)

    def test_too_long_path(self) -> None:
        path = "/" + "x" * 107 + ".sock"
        with self.assertRaisesRegex(EndpointError, "at most 107"):
            prepare_socket_path(path)


if __name__ == "__main__":
    unittest.main()

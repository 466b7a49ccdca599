"""The web chat's browser tests: a real `perch run` on a temporary data directory with the shipped
config and bots, and Debian's chromium driven by Selenium. Run by `make test` (scripts/web-test)."""
import base64
import json
import os
import secrets
import shutil
import signal
import sys
import socket
import subprocess
import tempfile
import unittest
import time
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PERCH = os.environ.get("PERCH_BINARY", os.path.join(ROOT, ".build", "debug", "perch"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`perch run` with the repository's config.yaml and bots/, changed by `ui`, the limits and
    `max_streams`."""

    def __init__(self, ui="    enabled: true\n", pins=100, saves=100, dev_sign_in=True, max_streams=None):
        self.dir = tempfile.mkdtemp(prefix="perch-web-")
        self.port = free_port()
        self.key = secrets.token_hex(16)
        with open(os.path.join(ROOT, "config.yaml")) as f:
            config = f.read()
        replacements = [
            ("  listen: 127.0.0.1:8080\n", f"  listen: 127.0.0.1:{self.port}\n  webDirectory: {ROOT}/web\n"
             + (f"  maxStreams: {max_streams}\n" if max_streams else "")),
            ("  dataDirectory: data\n", f"  dataDirectory: {self.dir}/data\n"),
            ("  devSignIn: true\n", f"  devSignIn: {'true' if dev_sign_in else 'false'}\n"),
            ("ui:\n  threadSubscription:\n    enabled: true\n", "ui:\n  threadSubscription:\n" + ui),
            ("  pinsPerConversation: 100\n", f"  pinsPerConversation: {pins}\n"),
            ("  savesPerUser: 100\n", f"  savesPerUser: {saves}\n"),
        ]
        for old, new in replacements:
            assert old in config, old
            config = config.replace(old, new)
        with open(os.path.join(self.dir, "config.yaml"), "w") as f:
            f.write(config)
        shutil.copytree(os.path.join(ROOT, "bots"), os.path.join(self.dir, "bots"))
        self.env = dict(os.environ, PERCH_API_KEY=self.key)
        self.log = open(os.path.join(self.dir, "perch.log"), "a")
        self.launch()

    def launch(self):
        """Starts `perch run` and waits until it is ready."""
        self.process = subprocess.Popen(
            [PERCH, "run", "--config", os.path.join(self.dir, "config.yaml")], env=self.env, stdout=self.log,
            stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(f"{self.url}/readyz", timeout=1) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.05)
        with open(self.log.name) as f:
            raise RuntimeError("perch did not become ready: " + f.read())

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def api(self, method, path, body=None, as_uid=None):
        """Calls the API with the key (as `as_uid` when given); returns `data` or raises HTTPError."""
        headers = {"apikey": self.key, "Content-Type": "application/json"}
        if as_uid:
            headers["onBehalfOf"] = as_uid
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read() or b"{}").get("data")

    def send(self, text, as_uid, group="general", **fields):
        body = {"receiver": group, "receiverType": "group", "category": "message", "type": "text",
                "data": {"text": text}}
        body.update(fields)
        return self.api("POST", "/v3/messages", body, as_uid=as_uid)

    def hold_websocket(self, uid):
        """Opens a WebSocket as `uid` (one of the server's streams); `release_websocket` closes it."""
        connection = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        key = base64.b64encode(os.urandom(16)).decode()
        connection.sendall(
            (f"GET /v3/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
             f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\napikey: {self.key}\r\n"
             f"onBehalfOf: {uid}\r\n\r\n").encode())
        answer = connection.recv(4096)
        assert answer.startswith(b"HTTP/1.1 101"), answer
        return connection

    @staticmethod
    def release_websocket(connection):
        """Sends a masked close frame, so the server gives the stream's place back at once."""
        connection.sendall(bytes([0x88, 0x80]) + os.urandom(4))
        connection.close()

    def restart(self, meanwhile):
        """Stops the host (SIGTERM), calls `meanwhile` while it is down, and starts it again on the
        same port and data."""
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(10)
        meanwhile()
        self.launch()

    def send_local(self, text, as_uid, group="general"):
        """`perch send` straight into the database (the host may be down)."""
        subprocess.run([PERCH, "send", "--local", "--config", os.path.join(self.dir, "config.yaml"), "--as", as_uid,
                        "--group", group, text], env=self.env, check=True, capture_output=True)

    def database(self):
        return os.path.join(self.dir, "data", "perch.sqlite")

    def stop(self):
        if self.process.poll() is not None:
            # The host ended before its tests did: show why (its log goes away with the directory).
            self.log.flush()
            with open(self.log.name) as f:
                sys.stderr.write(f"\nperch exited early (status {self.process.returncode}); its log:\n{f.read()}\n")
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,860",
                     "--disable-dev-shm-usage"]:
        options.add_argument(argument)
    # The page's console, so each test can see what the Content-Security-Policy refused.
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")),
                              options=options)
    driver.implicitly_wait(0)
    return driver


class Page:
    """The web chat in one browser, signed in as one person."""

    def __init__(self, driver, server, uid):
        self.d = driver
        self.server = server
        driver.get(server.url + "/")
        self.click(f'[data-testid="signin-{uid}"]')
        self.wait_for('[data-testid="nav-threads"]')

    def find(self, css):
        return self.d.find_element(By.CSS_SELECTOR, css)

    def finds(self, css):
        return self.d.find_elements(By.CSS_SELECTOR, css)

    def wait_for(self, css, timeout=10):
        return WebDriverWait(self.d, timeout).until(EC.visibility_of_element_located((By.CSS_SELECTOR, css)))

    def wait_until(self, predicate, timeout=10, what="the condition"):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                value = predicate()
            except StaleElementReferenceException:
                value = None  # the list re-rendered under us: look again
            if value:
                return value
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what}")

    def click(self, css):
        self.wait_for(css).click()

    def open_group(self, guid):
        self.click(f'[data-testid="conv-group-{guid}"]')
        self.wait_until(lambda: self.find("#conv-title").text.startswith("#"), what="the group")
        time.sleep(0.2)

    def message(self, message_id):
        return self.wait_for(f'#messages [data-id="{message_id}"]')

    def sheet_for(self, message_id, within="#messages"):
        self.d.execute_script("document.querySelector('#sheet').hidden = true")
        for attempt in range(5):
            try:
                node = self.wait_for(f'{within} [data-id="{message_id}"]')
                node.find_element(By.CSS_SELECTOR, '[data-testid="more"]').click()
                break
            except StaleElementReferenceException:
                if attempt == 4:
                    raise  # re-rendered five times in a row: something is wrong
        return self.wait_for('[data-testid="action-sheet"]')

    def sheet_items(self, message_id, within="#messages"):
        sheet = self.sheet_for(message_id, within)
        items = {b.get_attribute("data-testid"): b for b in sheet.find_elements(By.CSS_SELECTOR, "button")}
        return items

    def toast(self, expected, timeout=10):
        return self.wait_until(lambda: self.find("#toast").is_displayed() and expected in self.find("#toast").text,
                               timeout, f"the toast {expected!r}")

    def type(self, css, text):
        box = self.wait_for(css)
        box.send_keys(text)
        return box


class WebChatTestCase(unittest.TestCase):
    """A class's tests share one server (its `ui`, `pins`, `saves`) and one browser; each test's
    page signs in afresh, and a page the Content-Security-Policy refused anything fails it."""
    ui = "    enabled: true\n"
    pins = 100
    saves = 100

    @classmethod
    def setUpClass(cls):
        cls.server = Server(ui=cls.ui, pins=cls.pins, saves=cls.saves)
        cls.driver = browser()

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()
        cls.server.stop()

    def tearDown(self):
        # The page served with a strict Content-Security-Policy: nothing it does may be refused.
        refused = [entry["message"] for entry in self.driver.get_log("browser")
                   if "Content Security Policy" in entry["message"] or "Refused to" in entry["message"]]
        self.assertEqual(refused, [], "the Content-Security-Policy refused what the page did")

    def page(self, uid="alice"):
        self.driver.delete_all_cookies()
        self.driver.get(self.server.url + "/")
        self.driver.execute_script("sessionStorage.clear()")
        return Page(self.driver, self.server, uid)

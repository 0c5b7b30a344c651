// Posts one click to the ClickCounter (tests/fixtures/site.py), counted per ?name=… on the
// server; the request is synchronous, so it is counted before the click returns.
function count() {
  const request = new XMLHttpRequest();
  request.open("POST", "/click" + location.search, false);
  request.send();
  document.getElementById("count").textContent = request.responseText;
}

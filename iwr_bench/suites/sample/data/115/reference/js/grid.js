// The grid of thumbnails, its tag filter and its search box.
window.Grid = (function () {
  var grid = document.getElementById('grid');
  var filter = { tag: 'all', query: '' };
  var shown = [];

  function draw() {
    shown = Photos.all.filter(function (p) { return Photos.matches(p, filter.tag, filter.query); });
    grid.innerHTML = '';
    shown.forEach(function (photo, i) {
      var b = document.createElement('button');
      b.className = 'btn thumb';
      b.setAttribute('aria-label', photo.title);
      var img = document.createElement('img');
      img.src = Photos.src(photo);
      img.width = 237; img.height = 158; img.alt = '';
      var title = document.createElement('span');
      title.className = 'title'; title.textContent = photo.title;
      var tag = document.createElement('span');
      tag.className = 'tagname'; tag.textContent = photo.tag;
      b.appendChild(img); b.appendChild(title); b.appendChild(tag);
      b.addEventListener('click', function () { Lightbox.open(shown, i); });
      grid.appendChild(b);
    });
    document.getElementById('caption').textContent =
      'Showing ' + shown.length + ' of ' + Photos.all.length + ' photos';
  }

  Array.prototype.forEach.call(document.querySelectorAll('.tag'), function (button) {
    button.addEventListener('click', function () {
      filter.tag = button.getAttribute('data-tag');
      Array.prototype.forEach.call(document.querySelectorAll('.tag'), function (b) {
        b.classList.toggle('on', b === button);
      });
      draw();
    });
  });
  document.getElementById('search').addEventListener('input', function (e) {
    filter.query = e.target.value;
    draw();
  });
  document.getElementById('shuffle').addEventListener('click', function () {
    Photos.shuffle();
    draw();
  });
  draw();
  return { draw: draw };
})();

// The lightbox: one photo large, moved through with the arrow keys.
window.Lightbox = (function () {
  var box = document.getElementById('lightbox');
  var view = { list: [], index: 0, open: false };

  function show() {
    var photo = view.list[view.index];
    document.getElementById('big').src = Photos.src(photo);
    document.getElementById('big').alt = photo.title;
    document.getElementById('big-title').textContent = photo.title;
    document.getElementById('position').textContent = 'Photo ' + (view.index + 1) + ' of ' + view.list.length;
    document.getElementById('likes').textContent = 'Likes: ' + photo.likes;
  }

  function open(list, index) {
    view = { list: list, index: index, open: true };
    show();
    box.classList.add('open');
  }

  function close() {
    view.open = false;
    box.style.visibility = 'hidden';
  }

  function step(by) {
    var n = view.list.length;
    view.index = (view.index + by + n) % n;
    show();
  }

  document.addEventListener('keydown', function (e) {
    if (!view.open) return;
    if (e.key === 'ArrowRight') { e.preventDefault(); step(1); }
    else if (e.key === 'ArrowLeft') { e.preventDefault(); step(-1); }
    else if (e.key === 'Escape') { e.preventDefault(); close(); }
    else if (e.key === 'l' || e.key === 'L') { view.list[view.index].likes += 1; show(); }
  });
  document.getElementById('close').addEventListener('click', close);
  return { open: open, close: close };
})();

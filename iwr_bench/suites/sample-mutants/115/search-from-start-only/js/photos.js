// The photos of the gallery; each picture lives at img/<file>.png.
window.Photos = {
  all: [
    { title: 'Harbor at dusk', tag: 'city', file: 'harbor', likes: 17 },
    { title: 'Misty pines', tag: 'nature', file: 'pines', likes: 12 },
    { title: 'Desert dunes', tag: 'nature', file: 'dunes', likes: 5 },
    { title: 'Blue peaks', tag: 'nature', file: 'peaks', likes: 8 },
    { title: 'Night skyline', tag: 'city', file: 'skyline', likes: 30 },
    { title: 'Violet lake', tag: 'nature', file: 'lake', likes: 21 },
    { title: 'Market street', tag: 'city', file: 'market', likes: 9 },
    { title: 'Old bridge', tag: 'city', file: 'bridge', likes: 14 }
  ],
  src: function (photo) { return 'img/' + photo.file + '.png'; },
  matches: function (photo, tag, query) {
    var q = query.trim().toLowerCase();
    return (tag === 'all' || photo.tag === tag) && photo.title.toLowerCase().indexOf(q) === 0;
  },
  shuffle: function () {
    var list = this.all;
    for (var i = list.length - 1; i > 0; i--) {
      var j = Math.floor(Math.random() * (i + 1));
      var t = list[i]; list[i] = list[j]; list[j] = t;
    }
  }
};

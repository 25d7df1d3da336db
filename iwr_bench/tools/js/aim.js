const aim = (el) => {  // where to point at el: its box, scrolled into view; an element not
  let at = el;         // displayed (shown on hover) is pointed at through its displayed parent
  while (at.parentElement && at.getClientRects().length === 0) at = at.parentElement;
  let r = at.getBoundingClientRect();
  if (r.bottom <= 0 || r.right <= 0 || r.top >= innerHeight || r.left >= innerWidth) {
    at.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
    r = at.getBoundingClientRect();
  }
  return { r, through: at !== el };
};

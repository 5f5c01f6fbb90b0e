// A page's contents from the article header's list button. The theme binds that button's action to the first list
// button of the page only, one that the book's layout never shows; so the article header's forwards its click to it.
// On a laptop screen a notebook page shows its contents this way (tables.css gives the page the sidebar's width).
document.addEventListener("DOMContentLoaded", () => {
  const [bound, ...others] = document.querySelectorAll("button.secondary-toggle");
  for (const button of others) {
    button.addEventListener("click", (event) => {
      event.preventDefault();
      event.stopPropagation();
      bound.click();
    });
  }
});

// Chinese for the search page's messages that Sphinx's zh_CN catalogue does not hold
// under the words its searchtools.js asks for (the status line after a search).
(() => {
  const messages = {
    "Search Results": "搜索结果",
    "Searching": "正在搜索",
    "Preparing search...": "正在准备搜索……",
    ", in ": "，位于 ",
    // ngettext: Chinese has one form, so both entries keep the count
    "Search finished, found one page matching the search query.": [
      "搜索完成，找到 ${resultCount} 个匹配的页面。",
      "搜索完成，找到 ${resultCount} 个匹配的页面。",
    ],
    "Your search did not match any documents. Please make sure that all words are spelled correctly and that you've selected enough categories.":
      "没有找到匹配的页面。请检查拼写，或换一个词再搜。",
  };
  // doctools.js declares Documentation with const: a global binding, not a window property
  if (typeof Documentation !== "undefined" && Documentation.addTranslations) {
    const merged = Object.assign({}, Documentation.TRANSLATIONS, messages);
    Documentation.addTranslations({ locale: Documentation.LOCALE, plural_expr: "0", messages: merged });
  }
})();
